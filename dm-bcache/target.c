// SPDX-License-Identifier: GPL-2.0
/*
 * dm-bcache: the device-mapper target.
 *
 * Table line:
 *   <cache dev>[,<cache dev>...] <origin dev> [<#opt args>
 *                [origin_uuid <uuid>]
 *                [cache_mode writethrough|writeback|writearound|none]]
 *
 * A cache set of several devices (format version 3) is named by all its
 * members, comma separated, in any order.
 *
 * Messages: invalidate, gc (a GC pass and a checkpoint), flush (write
 * back all dirty data), cache_mode <mode> (leaving writeback flushes
 * first), and "<tunable> <value>" for the tunables the status line lists.
 *
 * Writeback needs origin_uuid: dirty data must outlive the table.
 *
 * Without origin_uuid the origin gets an ephemeral slot: it is cached
 * while the table lives and nothing is kept for it afterwards. With it,
 * the origin's cached data persists across removes and reboots.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uuid.h>

#include "dm-bcache.h"

#define BCH_STATUS_VERSION	2	/* 2: field 27, rewritten */
#define BCH_SEQ_CUTOFF_DEFAULT	(4ULL << 20 >> SECTOR_SHIFT)	/* 4 MiB */

struct bch_args {
	bool			has_uuid;
	u8			uuid[16];
	enum bch_cache_mode	mode;
};

static const char * const bch_mode_names[] = {
	[BCH_MODE_WRITETHROUGH]	= "writethrough",
	[BCH_MODE_WRITEAROUND]	= "writearound",
	[BCH_MODE_NONE]		= "none",
	[BCH_MODE_WRITEBACK]	= "writeback",
};

const char *bch_mode_name(enum bch_cache_mode mode)
{
	return bch_mode_names[mode];
}

int bch_parse_mode(const char *name, enum bch_cache_mode *mode, char **error)
{
	int i = match_string(bch_mode_names, ARRAY_SIZE(bch_mode_names), name);

	if (i >= 0) {
		*mode = i;
		return 0;
	}
	*error = "unknown cache_mode (writethrough, writeback, writearound, none)";
	return -EINVAL;
}

static int bch_parse_opts(struct dm_arg_set *as, struct bch_args *args,
			  char **error)
{
	static const struct dm_arg nr_opts = {
		0, 4, "invalid number of optional arguments"
	};
	unsigned int argc;
	const char *key;
	uuid_t uuid;
	int r;

	if (!as->argc)
		return 0;
	r = dm_read_arg_group(&nr_opts, as, &argc, error);
	if (r)
		return r;
	while (argc) {
		key = dm_shift_arg(as);
		argc--;
		if (!strcasecmp(key, "origin_uuid") && argc) {
			if (uuid_parse(dm_shift_arg(as), &uuid)) {
				*error = "origin_uuid is not a valid UUID";
				return -EINVAL;
			}
			argc--;
			if (uuid_is_null(&uuid)) {
				*error = "origin_uuid must not be the null UUID";
				return -EINVAL;
			}
			memcpy(args->uuid, uuid.b, 16);
			args->has_uuid = true;
		} else if (!strcasecmp(key, "cache_mode") && argc) {
			r = bch_parse_mode(dm_shift_arg(as), &args->mode, error);
			if (r)
				return r;
			argc--;
		} else {
			*error = "unknown or incomplete optional argument";
			return -EINVAL;
		}
	}
	if (as->argc) {
		*error = "too many arguments";
		return -EINVAL;
	}
	return 0;
}

static void bch_dtr(struct dm_target *ti)
{
	struct bch_target *bt = ti->private;

	if (bt->set) {
		/*
		 * Removing the table writes back what it can; the rest stays.
		 * Not on a reload: the new table holds the slot and writes back.
		 */
		if (bch_slot_dirty(bt) &&
		    bt->set->slots[bt->slot].holders == 1) {
			/*
			 * Not behind a live table (a reload to another
			 * target): writes through it would race with ours.
			 */
			if (dm_suspended(ti))
				bch_writeback_start(bt);
			if (bch_writeback_flush(bt))
				DMWARN("%s: slot %u: dirty data left in the cache",
				       bt->set->name, bt->slot);
		}
		bch_writeback_stop(bt);
		bch_writeback_exit(bt);
		bch_wait_fills(bt);
		/* Idle: deferred bios are in flight, and dm waited for them. */
		cancel_delayed_work_sync(&bt->defer_work);
		bch_slot_detach(bt->set, bt,
				!dm_suspended(ti) && !bch_slot_dirty(bt));
		bch_set_put(bt->set);
	}
	bioset_exit(&bt->bs);
	if (bt->origin_dev)
		dm_put_device(ti, bt->origin_dev);
	while (bt->nr_cache_devs)
		if (bt->cache_devs[--bt->nr_cache_devs])
			dm_put_device(ti, bt->cache_devs[bt->nr_cache_devs]);
	kfree(bt);
}

/*
 * The cache devices of @list, comma separated: the set's members, "-"
 * (a NULL entry) for a member that is missing.
 */
static int bch_get_cache_devs(struct dm_target *ti, struct bch_target *bt,
			      const char *list, fmode_t mode)
{
	char *copy = kstrdup(list, GFP_KERNEL), *rest = copy, *name;
	struct dm_dev **devs = bt->cache_devs;
	unsigned int i;
	int r = 0;

	if (!copy) {
		ti->error = "cannot allocate target context";
		return -ENOMEM;
	}
	while (!r && (name = strsep(&rest, ","))) {
		if (bt->nr_cache_devs == BCH_MAX_MEMBERS) {
			ti->error = "more cache devices than a cache set has members";
			r = -EINVAL;
		} else if (!strcmp(name, "-")) {
			devs[bt->nr_cache_devs++] = NULL;
			continue;
		} else if (!*name) {
			ti->error = "an empty cache device name";
			r = -EINVAL;
		} else {
			r = dm_get_device(ti, name, mode,
					  &devs[bt->nr_cache_devs]);
			if (r)
				ti->error = "cannot open the cache device";
			else
				bt->nr_cache_devs++;
		}
		for (i = 0; !r && i + 1 < bt->nr_cache_devs; i++) {
			if (devs[i] &&
			    devs[i]->bdev == devs[bt->nr_cache_devs - 1]->bdev) {
				ti->error = "a cache device is named twice";
				r = -EINVAL;
			}
		}
	}
	kfree(copy);
	return r;
}

static int bch_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct block_device *bdevs[BCH_MAX_MEMBERS];
	struct bch_args args = {};
	fmode_t mode = FMODE_READ | FMODE_WRITE;
	struct bch_target *bt;
	struct bch_cache_set *set;
	unsigned int i;
	int r;

	if (argc < 2) {
		ti->error = "expected <cache dev>[,...] <origin dev> [<#opt args> <opt args>...]";
		return -EINVAL;
	}
	if (!(dm_table_get_mode(ti->table) & FMODE_WRITE)) {
		ti->error = "read-only tables are not supported";
		return -EINVAL;
	}

	bt = kzalloc(sizeof(*bt), GFP_KERNEL);
	if (!bt) {
		ti->error = "cannot allocate target context";
		return -ENOMEM;
	}
	bt->ti = ti;
	ti->private = bt;
	bch_seq_init(&bt->seq, BCH_SEQ_CUTOFF_DEFAULT);
	bt->rewrite = true;
	bt->verify = true;
	bch_writeback_init(bt);
	bch_defer_init(bt);
	r = bioset_init(&bt->bs, BIO_POOL_SIZE, bch_clone_front_pad(), 0);
	if (r) {
		ti->error = "cannot allocate bio set";
		goto bad;
	}

	r = bch_get_cache_devs(ti, bt, dm_shift_arg(&as), mode);
	if (r)
		goto bad;
	r = dm_get_device(ti, dm_shift_arg(&as), mode, &bt->origin_dev);
	if (r) {
		ti->error = "cannot open the origin device";
		goto bad;
	}
	r = -EINVAL;
	for (i = 0; i < bt->nr_cache_devs; i++) {
		bdevs[i] = bt->cache_devs[i] ? bt->cache_devs[i]->bdev : NULL;
		if (bdevs[i] == bt->origin_dev->bdev) {
			ti->error = "cache and origin are the same device";
			goto bad;
		}
	}
	if (ti->len > bdev_nr_sectors(bt->origin_dev->bdev)) {
		ti->error = "origin device is smaller than the target";
		goto bad;
	}
	r = bch_parse_opts(&as, &args, &ti->error);
	if (r)
		goto bad;
	if (bch_origin_busy(bt->origin_dev->bdev->bd_dev,
			    dm_table_get_md(ti->table))) {
		ti->error = "origin is already cached by another device";
		r = -EBUSY;
		goto bad;
	}
	if (args.mode == BCH_MODE_WRITEBACK && !args.has_uuid) {
		ti->error = "cache_mode writeback needs origin_uuid";
		r = -EINVAL;
		goto bad;
	}
	bt->persistent = args.has_uuid;
	bt->mode = args.mode;

	set = bch_set_get(ti, bdevs, bt->nr_cache_devs, &ti->error);
	if (IS_ERR(set)) {
		r = PTR_ERR(set);
		goto bad;
	}
	r = bch_slot_attach(set, bt, args.has_uuid ? args.uuid : NULL,
			    &ti->error);
	if (r) {
		bch_set_put(set);
		goto bad;
	}
	bt->set = set;
	/* The design card's table has none: say what that means, once. */
	if (!bt->persistent)
		DMINFO("%s: slot %u: no origin_uuid: its cached data lives only as long as this table",
		       set->name, bt->slot);

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = bch_io_size();
	return 0;
bad:
	bch_dtr(ti);
	return r;
}

/*
 * Only the live table writes back: a reload's new table is constructed
 * while the old one still runs, and two workers on one slot would not
 * see each other's batches. The old one stops here, the new one starts
 * at resume.
 */
static void bch_postsuspend(struct dm_target *ti)
{
	struct bch_target *bt = ti->private;

	bch_writeback_stop(bt);
	bch_wait_fills(bt);
}

static void bch_resume(struct dm_target *ti)
{
	struct bch_target *bt = ti->private;

	bch_writeback_start(bt);
	/* Dirty data from before (a crash, another mode) drains now. */
	if (bch_slot_dirty(bt))
		bch_writeback_kick(bt);
}

static const char *bch_cache_state(struct bch_cache_set *set)
{
	struct bch_member *m;
	bool errors = atomic_read(&set->io_errors);

	if (bch_cache_failed(set))
		return "failed";
	/* Member 0's errors are the set's; the live others' their own. */
	bch_for_each_live_member(m, set)
		errors |= atomic_read(&m->io_errors) > 0;
	return errors || bch_set_degraded(set) ? "degraded" : "ok";
}

/* The name the table gave cache device @i: "-" if missing. */
static const char *bch_cache_dev_name(struct bch_target *bt, unsigned int i)
{
	return bt->cache_devs[i] ? bt->cache_devs[i]->name : "-";
}

static unsigned int bch_hit_ratio(struct bch_stats *st)
{
	u64 hits = atomic64_read(&st->read_hits);
	u64 all = hits + atomic64_read(&st->read_misses);

	return all ? div64_u64(hits * 100, all) : 0;
}

/*
 * The status line is documented in Documentation/dm-bcache.rst; fields
 * are only ever added at the end.
 */
static void bch_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result,
		       unsigned int maxlen)
{
	struct bch_target *bt = ti->private;
	struct bch_cache_set *set = bt->set;
	struct bch_stats *st = &bt->stats;
	enum bch_cache_mode mode;
	unsigned int sz = 0, i;

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("%u %u %u %llu/%llu %lld %lld %lld %lld %lld %llu %s %u %pUb %s",
		       BCH_STATUS_VERSION, set->block_size, set->bucket_size,
		       bch_set_used(set), bch_set_buckets(set),
		       atomic64_read(&st->read_hits),
		       atomic64_read(&st->read_misses),
		       atomic64_read(&st->write_hits),
		       atomic64_read(&st->write_misses),
		       atomic64_read(&st->bypassed),
		       bch_slot_dirty(bt), bch_mode_name(READ_ONCE(bt->mode)),
		       bt->slot,
		       set->uuids[bt->slot].uuid, bch_cache_state(set));
		DMEMIT(" %u %llu %lld %u %lld %lld %lld %lld",
		       bch_btree_depth(&set->btree), bch_btree_nodes(&set->btree),
		       atomic64_read(&set->gc_runs), bch_hit_ratio(st),
		       atomic64_read(&st->filled), atomic64_read(&st->retries),
		       atomic64_read(&st->cache_errors),
		       atomic64_read(&set->invalidations));
		DMEMIT(" %llu %llu/%llu %lld",
		       READ_ONCE(set->journal.seq), READ_ONCE(set->journal.used),
		       set->journal.ring_sectors,
		       atomic64_read(&set->checkpoints));
		DMEMIT(" %lld %lld", atomic64_read(&bt->wb.written),
		       atomic64_read(&st->rewritten));
		DMEMIT(" %lld %llu %llu %llu", atomic64_read(&st->deferred),
		       READ_ONCE(set->btree.reads),
		       READ_ONCE(set->btree.evictions),
		       READ_ONCE(set->btree.reads_unlocked));
		DMEMIT(" %llu %llu %lld", READ_ONCE(set->btree.compactions),
		       READ_ONCE(set->btree.merged_aside),
		       atomic64_read(&set->inserts_shared));
		DMEMIT(" %lld %u", atomic64_read(&st->csum_errors),
		       set->version);
		DMEMIT(" 9 sequential_cutoff %llu",
		       READ_ONCE(bt->seq.cutoff) << SECTOR_SHIFT);
		DMEMIT(" cache_priority_initial %u cache_priority_hit %u",
		       set->prio.initial, set->prio.hit);
		DMEMIT(" cache_priority_seek %u cache_priority_rescale %llu",
		       set->prio.seek, set->prio.rescale);
		DMEMIT(" writeback_percent %u writeback_running %u",
		       READ_ONCE(bt->wb.percent), READ_ONCE(bt->wb.running));
		DMEMIT(" rewrite_fragmented %u verify_csums %u",
		       READ_ONCE(bt->rewrite), READ_ONCE(bt->verify));
		break;
	case STATUSTYPE_TABLE:
		mode = READ_ONCE(bt->mode);
		for (i = 0; i < bt->nr_cache_devs; i++)
			DMEMIT("%s%s", i ? "," : "", bch_cache_dev_name(bt, i));
		DMEMIT(" %s", bt->origin_dev->name);
		if (bt->persistent || mode != BCH_MODE_WRITETHROUGH)
			DMEMIT(" %u", 2 * bt->persistent +
			       2 * (mode != BCH_MODE_WRITETHROUGH));
		if (bt->persistent)
			DMEMIT(" origin_uuid %pUb", set->uuids[bt->slot].uuid);
		if (mode != BCH_MODE_WRITETHROUGH)
			DMEMIT(" cache_mode %s", bch_mode_name(mode));
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",cache_device=%s", bch_cache_dev_name(bt, 0));
		for (i = 1; i < bt->nr_cache_devs; i++)
			DMEMIT(",cache_device_%u=%s", i, bch_cache_dev_name(bt, i));
		DMEMIT(",origin_device=%s;", bt->origin_dev->name);
		break;
	}
}

static int bch_set_tunable(struct bch_target *bt, const char *key,
			   const char *value)
{
	struct bch_prio_tunables *p = &bt->set->prio;
	u64 v;

	if (kstrtou64(value, 10, &v))
		return -EINVAL;
	if (!strcasecmp(key, "sequential_cutoff"))
		WRITE_ONCE(bt->seq.cutoff, v >> SECTOR_SHIFT);
	else if (!strcasecmp(key, "cache_priority_initial") && v < U16_MAX)
		WRITE_ONCE(p->initial, v);
	else if (!strcasecmp(key, "cache_priority_hit") && v < U16_MAX)
		WRITE_ONCE(p->hit, v);
	else if (!strcasecmp(key, "cache_priority_seek") && v < U16_MAX)
		WRITE_ONCE(p->seek, v);
	else if (!strcasecmp(key, "cache_priority_rescale") && v)
		WRITE_ONCE(p->rescale, v);
	else if (!strcasecmp(key, "writeback_percent") && v <= 100)
		WRITE_ONCE(bt->wb.percent, v);
	else if (!strcasecmp(key, "writeback_running") && v <= 1)
		WRITE_ONCE(bt->wb.running, v);
	else if (!strcasecmp(key, "rewrite_fragmented") && v <= 1)
		WRITE_ONCE(bt->rewrite, v);
	else if (!strcasecmp(key, "verify_csums") && v <= 1)
		WRITE_ONCE(bt->verify, v);
	else
		return -EINVAL;
	if (bch_slot_dirty(bt))
		bch_writeback_kick(bt);
	return 0;
}

static int bch_message_mode(struct bch_target *bt, const char *name)
{
	enum bch_cache_mode mode;
	char *error;
	int r;

	r = bch_parse_mode(name, &mode, &error);
	if (r) {
		DMWARN("%s", error);
		return r;
	}
	if (mode == BCH_MODE_WRITEBACK && !bt->persistent) {
		DMWARN("cache_mode writeback needs origin_uuid");
		return -EINVAL;
	}
	/* New writes stop making dirty data first, then it drains. */
	WRITE_ONCE(bt->mode, mode);
	if (mode != BCH_MODE_WRITEBACK)
		r = bch_writeback_flush(bt);
	return r;
}

/*
 * Drop the origin's cached data, never its dirty data: that is written
 * back first, and refused in writeback, where new dirty data would come
 * between the flush and the drop.
 */
static int bch_message_invalidate(struct bch_target *bt)
{
	int r;

	if (READ_ONCE(bt->mode) == BCH_MODE_WRITEBACK) {
		DMWARN("invalidate would drop dirty data: leave cache_mode writeback first");
		return -EBUSY;
	}
	r = bch_writeback_flush(bt);
	if (r)
		return r;
	/* A dirty write mapped before the mode changed may be indexed now. */
	bch_index_lock(bt->set);
	r = bch_slot_dirty(bt) ? -EBUSY : bch_slot_invalidate(bt->set, bt->slot);
	up_write(&bt->set->btree_lock);
	return r;
}

/*
 * A checkpoint now, with a GC pass ("gc") or only if one is due
 * ("checkpoint"); one that found no memory is retried by bch_gc_work().
 */
static int bch_message_checkpoint(struct bch_cache_set *set, bool gc)
{
	int r = bch_checkpoint(set, gc);

	if (bch_checkpoint_retry(r))
		queue_work(set->wq, &set->gc_work);
	return r;
}

static int bch_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct bch_target *bt = ti->private;
	int r = -EINVAL;

	if (argc == 1 && !strcasecmp(argv[0], "invalidate"))
		r = bch_message_invalidate(bt);
	else if (argc == 1 && !strcasecmp(argv[0], "flush"))
		r = bch_writeback_flush(bt);
	else if (argc == 1 && !strcasecmp(argv[0], "gc"))
		r = bch_message_checkpoint(bt->set, true);
	else if (argc == 1 && !strcasecmp(argv[0], "checkpoint"))
		r = bch_message_checkpoint(bt->set, false);
	else if (argc == 2 && !strcasecmp(argv[0], "cache_mode"))
		r = bch_message_mode(bt, argv[1]);
	else if (argc == 2)
		r = bch_set_tunable(bt, argv[0], argv[1]);
	if (r == -EINVAL)
		DMWARN("unrecognised message or value: %s%s",
		       argc ? argv[0] : "(none)", argc > 1 ? " ..." : "");
	return r;
}

static int bch_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct bch_target *bt = ti->private;
	unsigned int i;
	int r = 0;

	for (i = 0; !r && i < bt->nr_cache_devs; i++)
		if (bt->cache_devs[i])
			r = fn(ti, bt->cache_devs[i], 0,
			       bdev_nr_sectors(bt->cache_devs[i]->bdev), data);
	if (!r)
		r = fn(ti, bt->origin_dev, 0, ti->len, data);
	return r;
}

/*
 * A discard or write-zeroes punches its range out of the index under the
 * index write lock, a walk over every key in the range: bound what one bio
 * may cover, so that a mkfs discarding a 4 TB origin stalls other IO for
 * one bounded piece at a time (dm-thin bounds its discards the same way).
 */
#define BCH_MAX_PUNCH_SECTORS	(64U << (20 - SECTOR_SHIFT))

static void bch_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	if (limits->max_discard_sectors > BCH_MAX_PUNCH_SECTORS)
		limits->max_discard_sectors = BCH_MAX_PUNCH_SECTORS;
	if (limits->max_hw_discard_sectors > BCH_MAX_PUNCH_SECTORS)
		limits->max_hw_discard_sectors = BCH_MAX_PUNCH_SECTORS;
	if (limits->max_write_zeroes_sectors > BCH_MAX_PUNCH_SECTORS)
		limits->max_write_zeroes_sectors = BCH_MAX_PUNCH_SECTORS;
}

static struct target_type bch_target_type = {
	.name		 = "bcache",
	.version	 = {0, 1, 0},
	.module		 = THIS_MODULE,
	.ctr		 = bch_ctr,
	.dtr		 = bch_dtr,
	.map		 = bch_map,
	.end_io		 = bch_end_io,
	.postsuspend	 = bch_postsuspend,
	.resume		 = bch_resume,
	.status		 = bch_status,
	.message	 = bch_message,
	.iterate_devices = bch_iterate_devices,
	.io_hints	 = bch_io_hints,
};

static int __init dm_bcache_init(void)
{
	return dm_register_target(&bch_target_type);
}

static void __exit dm_bcache_exit(void)
{
	dm_unregister_target(&bch_target_type);
	bch_failed_exit();
}

module_init(dm_bcache_init);
module_exit(dm_bcache_exit);

MODULE_DESCRIPTION(DM_NAME " bcache-format block cache target");
MODULE_AUTHOR("dm-bcache developers");
MODULE_LICENSE("GPL");
