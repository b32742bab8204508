/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-bcache: what bset.c and btree.c need from the kernel, so that they
 * also build in userspace for the unit tests (tests/btree_test.c).
 *
 * In userspace the program provides bch_kvzalloc(), bch_kvfree(),
 * get_random_u64() and bch_crc32c() itself (the tests inject faults and
 * want reproducible seqs).
 */
#ifndef _BCH_COMPAT_H
#define _BCH_COMPAT_H

#ifdef __KERNEL__

#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>

/*
 * Called from map() with the index locked: no IO may be issued to reclaim
 * memory (it could wait on ourselves), but vmalloc is fine, which plain
 * kvmalloc(GFP_NOIO) would not try.
 */
static inline void *bch_kvzalloc(size_t size)
{
	unsigned int noio = memalloc_noio_save();
	void *p = kvzalloc(size, GFP_KERNEL);

	memalloc_noio_restore(noio);
	return p;
}

static inline void bch_kvfree(void *p)
{
	kvfree(p);
}

#else /* !__KERNEL__ */

#include <endian.h>
#include <errno.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;

#define U8_MAX		((u8)~0U)
#define U16_MAX		((u16)~0U)
#define U32_MAX		((u32)~0U)
#define U64_MAX		((u64)~0ULL)

#define cpu_to_le16(x)	htole16(x)
#define cpu_to_le32(x)	htole32(x)
#define cpu_to_le64(x)	htole64(x)
#define le16_to_cpu(x)	le16toh(x)
#define le32_to_cpu(x)	le32toh(x)
#define le64_to_cpu(x)	le64toh(x)

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define min_t(t, a, b) ({ t __a = (a), __b = (b); __a < __b ? __a : __b; })
#define max_t(t, a, b) ({ t __a = (a), __b = (b); __a > __b ? __a : __b; })
#define min(a, b) ({ typeof(a) __x = (a); typeof(b) __y = (b); __x < __y ? __x : __y; })
#define max(a, b) ({ typeof(a) __x = (a); typeof(b) __y = (b); __x > __y ? __x : __y; })

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define cond_resched()	do { } while (0)

/* A broken invariant is a test failure: stop where it happened. */
#define WARN_ON(cond) ({						\
	bool __warn = !!(cond);						\
	if (unlikely(__warn)) {						\
		fprintf(stderr, "WARN_ON(%s) at %s:%d\n", #cond,	\
			__FILE__, __LINE__);				\
		abort();						\
	}								\
	__warn;								\
})

#ifndef pr_fmt
#define pr_fmt(fmt)	fmt
#endif
#define pr_err(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)

static inline u64 div_u64(u64 n, u32 d)
{
	return n / d;
}

static inline u64 div_u64_rem(u64 n, u32 d, u32 *rem)
{
	*rem = n % d;
	return n / d;
}

void *bch_kvzalloc(size_t size);
void bch_kvfree(void *p);
u64 get_random_u64(void);

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Locks and counters shared inserts use, on pthreads (the tests' threads). */
#define rwlock_t		pthread_rwlock_t
#define rwlock_init(l)		pthread_rwlock_init((l), NULL)
#define read_lock(l)		pthread_rwlock_rdlock(l)
#define read_unlock(l)		pthread_rwlock_unlock(l)
#define write_lock(l)		pthread_rwlock_wrlock(l)
#define write_unlock(l)		pthread_rwlock_unlock(l)

#define spinlock_t		pthread_mutex_t
#define spin_lock_init(l)	pthread_mutex_init((l), NULL)
#define spin_lock(l)		pthread_mutex_lock(l)
#define spin_unlock(l)		pthread_mutex_unlock(l)

struct bch_atomic64 {
	s64 counter;
};

#define atomic64_t		struct bch_atomic64

static inline s64 atomic64_inc_return(atomic64_t *v)
{
	return __atomic_add_fetch(&v->counter, 1, __ATOMIC_SEQ_CST);
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* The few list.h calls btree.c makes. */
struct list_head {
	struct list_head *next, *prev;
};

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool list_empty(const struct list_head *l)
{
	return l->next == l;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del_init(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	INIT_LIST_HEAD(n);
}

static inline void list_move_tail(struct list_head *n, struct list_head *h)
{
	list_del_init(n);
	list_add_tail(n, h);
}

static inline void list_move(struct list_head *n, struct list_head *h)
{
	list_del_init(n);
	list_add_tail(n, h->next);
}

#define list_first_entry(h, type, member) container_of((h)->next, type, member)

#endif /* __KERNEL__ */

/* Standard CRC-32C, i.e. ~crc32c(~0, buf, len): super.c or the tests. */
u32 bch_crc32c(const void *buf, size_t len);

#endif /* _BCH_COMPAT_H */
