#!/bin/bash
# Turn the guest's raw results (bench/guest/bench.sh) into report.md and
# gnuplot PNGs. Usage: bench/report.sh DIR   (DIR holds results.txt and
# console.log; the report and plots are written there). POSIX awk only.
set -euo pipefail
OUT=${1:?usage: bench/report.sh DIR}
RES=$OUT/results.txt
[ -f "$RES" ] || { echo "bench/report.sh: no $RES" >&2; exit 2; }
REPORT=$OUT/report.md
PD=$OUT/plotdata
rm -rf "$PD"
mkdir -p "$PD"

# Kernel problems on the console (the list of tests/run).
PROBLEMS='BUG:|kernel BUG|WARNING:|Oops|general protection fault|Kernel panic|KASAN|UBSAN|kmemleak|possible circular locking|possible recursive locking|inconsistent lock state|blocked for more than|soft lockup|hard LOCKUP|detected stall|Call Trace|RIP:|list_add corruption|list_del corruption|Unable to handle kernel|invalid opcode:'
problems=
if [ -f "$OUT/console.log" ]; then
	problems=$(tr -d '\r' <"$OUT/console.log" | grep -aE "$PROBLEMS" | grep -av '@@' | head -n 40 || true)
fi
printf '%s\n' "$problems" >"$PD/problems"

awk -v PD="$PD" '
function median(s,    n, a, i, j, t) {	# s: space-separated numbers
	n = split(s, a, " ")
	if (n == 0) return ""
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
function minmax(s,    n, a, i, lo, hi) {
	n = split(s, a, " "); lo = a[1] + 0; hi = a[1] + 0
	for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
	return lo "|" hi
}
function metric(j, ri, rb, wi, wb) {
	if (j == "hit" || j == "hitqd") return ri
	if (j == "seq1m" || j == "seq1m-frag" || j == "bufseq") return rb / 1024
	if (j == "randwrite") return wi
	if (j == "rw9010") return ri + wi
	return ""
}
function fmt(v) {
	if (v == "") return "-"
	if (v >= 1000) return sprintf("%.0f", v)
	if (v >= 100) return sprintf("%.0f", v)
	if (v >= 10) return sprintf("%.1f", v)
	return sprintf("%.2f", v)
}
function r2(v) { return (v == "") ? "-" : sprintf("%.2f", v) }
function pct(h, m) { return (h == "" || h == "-" || h + m == 0) ? "-" : sprintf("%.1f%%", 100 * h / (h + m)) }
$1 == "V" { line = $0; sub(/^V [^ ]+ /, "", line); if ($2 == "case") { ncase++; cname[ncase] = $3; cinfo[$3] = line } else V[$2] = line; next }
$1 == "R" {
	c = $2; j = $3; n = $4; r = $5
	v = metric(j, $6, $7, $8, $9)
	if (v == "") next
	if (n ~ /^ref@/) { n = substr(n, 5); ref[c, j, n, r] = v; refsys[c, j, n, r] = $13; allref[c, j] = allref[c, j] " " v; next }
	val[c, j, n, r] = v; vals[c, j, n] = vals[c, j, n] " " v; reps[c, j, n] = reps[c, j, n] " " r
	lat[c, j, n] = lat[c, j, n] " " $10; sys[c, j, n] = sys[c, j, n] " " $13; usr[c, j, n] = usr[c, j, n] " " $14
	seen[c, j, n] = 1
	if (!((c, j) in jseen)) { jseen[c, j] = 1; jlist[c] = jlist[c] " " j }
	next
}
$1 == "H" { H[$2, $3, $4] = $5 " " $6; next }
$1 == "W" { W[$2, $3, $4] = $5 " " $6 " " $7; next }
$1 == "Z" { Zi[$2, $3, $4] = $5; Zf[$2, $3, $4] = $6; if ($4 > Zmax[$2, $3]) Zmax[$2, $3] = $4; Zhas[$2, $3] = 1; next }
$1 == "ZC" { k = ZCn[$2, $3]++; ZCt[$2, $3, k] = $4; ZCh[$2, $3, k] = $5; ZCm[$2, $3, k] = $6; ZCmax[$2, $3] = k; next }
$1 == "S" { S[$2, $3] = $4 " " $5 " " $6 " " $7; next }
$1 == "M" { M[$2, $3, $4] = $5 " " $6 " " $7; Mhas[$2, $3] = 1; next }
$1 == "MF" { MF[$2, $3] = $4; next }
$1 == "MS" { MS[$2, $3] = MS[$2, $3] (MS[$2, $3] == "" ? "" : ", ") $4 " +" $5 " KiB"; next }
$1 == "D" { D[$2, $3] = $4 " " $5; next }
$1 == "E" { ne++; E[ne] = substr($0, 3); next }
$1 == "T" { T[$2, $3] = $4; next }
END {
	nc = split("raw-cache raw-origin dm-linear dm-bcache dm-bcache-nocsum dm-bcache-v2 bcache dm-cache dm-writecache", C, " ")
	label["raw-cache"] = "raw cache device"; label["raw-origin"] = "raw origin"
	label["dm-linear"] = "dm-linear (over the cache device)"; label["dm-bcache"] = "**dm-bcache**"
	label["dm-bcache-nocsum"] = "dm-bcache, verify_csums 0"; label["dm-bcache-v2"] = "dm-bcache, format 2 (no checksums)"
	label["bcache"] = "mainline bcache"; label["dm-cache"] = "dm-cache smq"; label["dm-writecache"] = "dm-writecache"
	jl["hit"] = "4k random read, QD1, 32 MiB warmed working set (hit path)"; ju["hit"] = "IOPS"
	jl["hitqd"] = "4k random read, 2 jobs x QD16, warmed (hit path under load)"; ju["hitqd"] = "IOPS"
	jl["seq1m"] = "1 MiB sequential read, QD4, of 32 MiB cached by 128 KiB reads"; ju["seq1m"] = "MiB/s"
	jl["seq1m-frag"] = "1 MiB sequential read, QD4, of the 32 MiB cached by 4k reads"; ju["seq1m-frag"] = "MiB/s"
	jl["bufseq"] = "buffered sequential read (1 MiB reads, read-ahead 128 KiB) of cached data"; ju["bufseq"] = "MiB/s"
	jl["randwrite"] = "4k random write, QD16, 32 MiB"; ju["randwrite"] = "IOPS"
	jl["rw9010"] = "4k random 90% read / 10% write, QD16, on the warmed 32 MiB"; ju["rw9010"] = "IOPS (r+w)"

	# per (case, job, contender): median, range, paired ratio to the reference
	for (ci = 1; ci <= ncase; ci++) {
		c = cname[ci]; nj = split(jlist[c], J, " ")
		for (k = 1; k <= nj; k++) {
			j = J[k]; refall = median(allref[c, j])
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, j, n) in seen)) continue
				med[c, j, n] = median(vals[c, j, n])
				nr = split(reps[c, j, n], RR, " "); split(sys[c, j, n], SS, " "); pr = ""; prs = ""; paired = 1
				for (q = 1; q <= nr; q++) {
					r = RR[q]
					if (!((c, j, n, r) in ref) || ref[c, j, n, r] + 0 == 0) { paired = 0; break }
					pr = pr " " (val[c, j, n, r] / ref[c, j, n, r])
					if (refsys[c, j, n, r] + 0 > 0) prs = prs " " (SS[q] / refsys[c, j, n, r])
				}
				if (paired) { norm[c, j, n] = median(pr); how[c, j, n] = "paired"; anypaired[c] = 1 }
				else how[c, j, n] = "medians"
				cpun[c, j, n] = (paired && prs != "") ? median(prs) : ""
			}
			# unpaired: the ratio of the medians to that of the raw cache device
			rc = ((c, j, "raw-cache") in seen) ? med[c, j, "raw-cache"] : refall
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, j, n) in seen)) continue
				if (rc != "" && rc > 0) unp[c, j, n] = med[c, j, n] / rc
				if (how[c, j, n] == "medians" && ((c, j, n) in unp)) norm[c, j, n] = unp[c, j, n]
			}
			# best peer: the best normalized figure among the other caches
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, j, n) in norm) || n !~ /^(dm-bcache|bcache|dm-cache|dm-writecache)$/) continue
				best = ""; bestn = ""
				for (i2 = 1; i2 <= nc; i2++) {
					p = C[i2]
					if (p == n || p !~ /^(dm-bcache|bcache|dm-cache|dm-writecache)$/ || !((c, j, p) in norm)) continue
					if (best == "" || norm[c, j, p] > best) { best = norm[c, j, p]; bestn = p }
				}
				if (best != "" && best > 0) { peer[c, j, n] = norm[c, j, n] / best; peern[c, j, n] = bestn }
			}
		}
	}

	# ---- the tables (report body, written to PD/body.md) ----
	B = PD "/body.md"
	for (ci = 1; ci <= ncase; ci++) {
		c = cname[ci]; nj = split(jlist[c], J, " ")
		printf "\n## Case `%s`\n\n%s\n", c, cinfo[c] > B
		if (nj == 0) { print "\n(no throughput jobs)" > B }
		for (k = 1; k <= nj; k++) {
			j = J[k]
			printf "\n### %s: %s, %s\n\n", j, (j in jl) ? jl[j] : j, ju[j] > B
			if (anypaired[c]) {
				print "| contender | median | range | raw cache alongside (median) | x raw cache (paired) | x raw cache (medians) | x best peer (which) | mean lat, us | read hits (counters) | warm-up |" > B
				print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" > B
			} else {
				print "| contender | median | range | x raw cache | x best peer (which) | mean lat, us | read hits (counters) | warm-up |" > B
				print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |" > B
			}
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, j, n) in seen)) continue
				split(minmax(vals[c, j, n]), mm, "|")
				h = H[c, j, n]; split(h, hh, " ")
				hits = (h == "" || hh[1] == "-") ? "-" : pct(hh[1], hh[2]) " (" hh[1] "/" hh[1] + hh[2] ")"
				w = ""
				if (j ~ /^(hit|hitqd|rw9010|seq1m-frag)$/ && ((c, "hot", n) in W)) { split(W[c, "hot", n], ww, " "); w = ww[1] " pass(es), last " pct(ww[2], ww[3]) }
				if (j ~ /^(seq1m|bufseq)$/ && ((c, "seq", n) in W)) { split(W[c, "seq", n], ww, " "); w = ww[1] " pass(es), last " pct(ww[2], ww[3]) }
				rs = ""
				for (q = 1; q <= 99; q++) if ((c, j, n, q) in ref) rs = rs " " ref[c, j, n, q]
				printf "| %s | %s | %s-%s |", label[n], fmt(med[c, j, n]), fmt(mm[1]), fmt(mm[2]) > B
				if (anypaired[c])
					printf " %s | %s | %s |", (rs == "") ? "-" : fmt(median(rs)),
						(how[c, j, n] == "paired") ? r2(norm[c, j, n]) : "-", r2(unp[c, j, n]) > B
				else
					printf " %s |", r2(norm[c, j, n]) > B
				printf " %s | %s | %s | %s |\n", ((c, j, n) in peer) ? r2(peer[c, j, n]) " (" peern[c, j, n] ")" : "-",
					fmt(median(lat[c, j, n])), hits, (w == "") ? "-" : w > B
				# plot data: rows job, columns contenders
				pdat[c, j, n] = r2(norm[c, j, n])
			}
		}
		# CPU cost
		if ((c, "hit", "dm-linear") in seen) {
			printf "\n### CPU cost: guest system time per IO\n\n" > B
			print "Per IO of the hit-path jobs, of the fio job'"'"'s threads (fio'"'"'s own accounting: the hit path runs in the submitting thread); \"x dm-linear\" = median of (contender / its simultaneous reference run), divided by the same for dm-linear over the cache device." > B
			print "\n| contender | job | sys us/IO | user us/IO | x dm-linear |" > B
			print "| --- | --- | ---: | ---: | ---: |" > B
			for (k = 1; k <= nj; k++) {
				j = J[k]
				if (j != "hit" && j != "hitqd") continue
				for (i = 1; i <= nc; i++) {
					n = C[i]
					if (!((c, j, n) in seen) || n == "raw-origin") continue
					x = (cpun[c, j, n] != "" && cpun[c, j, "dm-linear"] != "" && cpun[c, j, "dm-linear"] > 0) ? r2(cpun[c, j, n] / cpun[c, j, "dm-linear"]) : "-"
					printf "| %s | %s | %.1f | %.1f | %s |\n", label[n], j, median(sys[c, j, n]), median(usr[c, j, n]), x > B
					cpux[c, j, n] = x
				}
			}
		}
		# zipf
		zc = 0
		for (i = 1; i <= nc; i++) if ((c, C[i]) in Zhas) zc = 1
		if (zc) {
			printf "\n### zipf: 4k random read, zipf 1.1 over 512 MiB (4x the cache), QD8, from cold\n\n" > B
			print "Hit ratio from the contender'"'"'s counters (sampled each second) and inferred from latency (an IO done in <= half the origin delay is a hit). Plot: `zipf-" c ".png`." > B
			print "\n| contender | IOs | IOPS | hit ratio, whole run (counters) | last third (counters) | whole run (latency) | last third (latency) |" > B
			print "| --- | ---: | ---: | ---: | ---: | ---: | ---: |" > B
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, n) in Zhas)) continue
				zm = Zmax[c, n]; ti = 0; tf = 0; li = 0; lf = 0
				for (s = 0; s <= zm; s++) { ti += Zi[c, n, s]; tf += Zf[c, n, s]; if (s >= zm * 2 / 3) { li += Zi[c, n, s]; lf += Zf[c, n, s] } }
				f = PD "/zipf-" c "-" n ".dat"
				for (s = 0; s < zm; s++) printf "%d %s\n", s, (Zi[c, n, s] > 0) ? Zf[c, n, s] / Zi[c, n, s] : "-" > f
				close(f)
				cm = ZCmax[c, n]; wh = "-"; lt = "-"
				if (cm > 0) {
					# the run: from the last sample before the IO started to the first after it ended
					s0 = 0; while (s0 < cm && ZCh[c, n, s0 + 1] + ZCm[c, n, s0 + 1] == ZCh[c, n, 0] + ZCm[c, n, 0]) s0++
					s1 = cm; while (s1 > s0 && ZCh[c, n, s1 - 1] + ZCm[c, n, s1 - 1] == ZCh[c, n, cm] + ZCm[c, n, cm]) s1--
					dh = ZCh[c, n, s1] - ZCh[c, n, s0]; dm = ZCm[c, n, s1] - ZCm[c, n, s0]; wh = pct(dh, dm)
					s2 = s0; while (s2 < s1 && ZCt[c, n, s2] - ZCt[c, n, s0] < (ZCt[c, n, s1] - ZCt[c, n, s0]) * 2 / 3) s2++
					dh = ZCh[c, n, s1] - ZCh[c, n, s2]; dm = ZCm[c, n, s1] - ZCm[c, n, s2]; lt = pct(dh, dm)
					zwhole[c, n] = wh; zlast[c, n] = lt
					f = PD "/zipfc-" c "-" n ".dat"
					for (s = s0 + 1; s <= s1; s++) {
						dh = ZCh[c, n, s] - ZCh[c, n, s - 1]; dm = ZCm[c, n, s] - ZCm[c, n, s - 1]
						printf "%.1f %s\n", ZCt[c, n, s] - ZCt[c, n, s0], (dh + dm > 0) ? dh / (dh + dm) : "-" > f
					}
					close(f)
				}
				printf "| %s | %d | %.0f | %s | %s | %s | %s |\n", label[n], ti, ti / (zm + 1), wh, lt, pct(tf, ti - tf), pct(lf, li - lf) > B
				zlat[c, n] = pct(lf, li - lf)
			}
		}
		# scan
		sc = 0
		for (i = 1; i <= nc; i++) if ((c, C[i]) in S) sc = 1
		if (sc) {
			printf "\n### scan: 8 MiB hot set warmed, a 1 MiB sequential scan of 2x the cache (256 MiB), then the hot set again\n\n" > B
			print "| contender | hot set after the scan: hits (counters) | hit ratio | IOs <= half the delay | scan IOs bypassed |" > B
			print "| --- | ---: | ---: | ---: | ---: |" > B
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, n) in S)) continue
				split(S[c, n], ss, " ")
				printf "| %s | %s/%s | %s | %s%% | %s |\n", label[n], ss[1], ss[1] + ss[2], pct(ss[1], ss[2]), ss[4], ss[3] > B
				shot[c, n] = (ss[1] + ss[2] > 0) ? ss[1] / (ss[1] + ss[2]) : ""
			}
		}
		# memory
		mc = 0
		for (i = 1; i <= nc; i++) if ((c, C[i]) in Mhas) mc = 1
		if (mc) {
			printf "\n### Metadata memory: 4k random fill of 96 MiB, /proc/meminfo deltas (page cache dropped)\n\n" > B
			print "\"used\" = MemTotal - MemFree - Buffers - Cached (everything the kernel holds, incl. pages from __get_free_pages that neither Slab nor VmallocUsed show); the brd pages were allocated before any contender. Per GiB = fill delta / what the contender reports filled." > B
			print "\n| contender | set-up: used KiB | fill: used KiB | slab KiB | vmalloc KiB | filled MiB | used per GiB cached | largest slab growth |" > B
			print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |" > B
			for (i = 1; i <= nc; i++) {
				n = C[i]
				if (!((c, n) in Mhas)) continue
				split(M[c, n, "used"], u, " "); split(M[c, n, "slab"], sl, " "); split(M[c, n, "vmalloc"], vm, " ")
				fl = MF[c, n] + 0
				per = (fl > 0) ? (u[3] - u[2]) / (fl / 1048576) / 1024 : ""
				printf "| %s | %d | %d | %d | %d | %.1f | %s MiB | %s |\n", label[n], u[2] - u[1], u[3] - u[2],
					sl[3] - sl[2], vm[3] - vm[2], fl / 1024, (per == "") ? "-" : sprintf("%.1f", per),
					(MS[c, n] == "") ? "-" : MS[c, n] > B
				mper[c, n] = per
			}
		}
		# plot data: ratio to the raw cache device per job
		f = PD "/ratios-" c ".dat"; any = 0
		printf "job" > f
		for (i = 1; i <= nc; i++) if (C[i] != "dm-linear") printf " %s", C[i] > f
		printf "\n" > f
		for (k = 1; k <= nj; k++) {
			j = J[k]; printf "%s", j > f
			for (i = 1; i <= nc; i++) if (C[i] != "dm-linear") { v = ((c, j, C[i]) in pdat) ? pdat[c, j, C[i]] : "-"; printf " %s", v > f; any = 1 }
			printf "\n" > f
		}
		close(f)
		if (!any || nj == 0) system("rm -f " f)
	}
	close(B)

	# ---- targets (PD/targets.md) ----
	T2 = PD "/targets.md"
	print "| target | case | dm-bcache | met? |" > T2
	print "| --- | --- | --- | --- |" > T2
	for (ci = 1; ci <= ncase; ci++) {
		c = cname[ci]
		if ((c, "hit", "dm-bcache") in norm) {
			x = norm[c, "hit", "dm-bcache"]
			printf "| hit-path 4k random read >= 0.95 x raw cache | %s | %.2f x | %s |\n", c, x, (x >= 0.95) ? "yes" : "**no**" > T2
			if ((c, "hit", "dm-bcache") in peer) { x = peer[c, "hit", "dm-bcache"]
				printf "| hit-path 4k random read >= best peer | %s | %.2f x %s | %s |\n", c, x, peern[c, "hit", "dm-bcache"], (x >= 1) ? "yes" : "**no**" > T2 }
		}
		if ((c, "hitqd", "dm-bcache") in norm) {
			x = norm[c, "hitqd", "dm-bcache"]
			printf "| (extra) hit path, 2 x QD16: >= 0.95 x raw cache | %s | %.2f x | %s |\n", c, x, (x >= 0.95) ? "yes" : "**no**" > T2
			if ((c, "hitqd", "dm-bcache") in peer) { x = peer[c, "hitqd", "dm-bcache"]
				printf "| (extra) hit path, 2 x QD16: >= best peer | %s | %.2f x %s | %s |\n", c, x, peern[c, "hitqd", "dm-bcache"], (x >= 1) ? "yes" : "**no**" > T2 }
		}
		if ((c, "seq1m", "dm-bcache") in norm) {
			x = norm[c, "seq1m", "dm-bcache"]
			printf "| cached 1 MiB sequential read >= 0.95 x raw cache | %s | %.2f x | %s |\n", c, x, (x >= 0.95) ? "yes" : "**no**" > T2
		}
		if ((c, "dm-bcache") in zwhole && (c, "dm-cache") in zwhole) {
			a = zwhole[c, "dm-bcache"]; b = zwhole[c, "dm-cache"]; sub(/%/, "", a); sub(/%/, "", b)
			a2 = zlast[c, "dm-bcache"]; b2 = zlast[c, "dm-cache"]; sub(/%/, "", a2); sub(/%/, "", b2)
			printf "| zipf 1.1 hit ratio >= smq (whole run) | %s | %s%% vs smq %s%% | %s |\n", c, a, b, (a + 0 >= b + 0) ? "yes" : "**no**" > T2
			printf "| zipf 1.1 hit ratio >= smq (last third) | %s | %s%% vs smq %s%% | %s |\n", c, a2, b2, (a2 + 0 >= b2 + 0) ? "yes" : "**no**" > T2
		}
		if ((c, "dm-bcache") in shot && shot[c, "dm-bcache"] != "") {
			x = shot[c, "dm-bcache"]
			printf "| hot set survives the scan (>= 0.9 hit ratio) | %s | %.3f | %s |\n", c, x, (x >= 0.9) ? "yes" : "**no**" > T2
		}
	}
	close(T2)

	# ---- header facts (PD/facts) ----
	F = PD "/facts"
	for (k in V) print k "\t" V[k] > F
	close(F)
	F = PD "/errors"
	for (i = 1; i <= ne; i++) print E[i] > F
	close(F)
	F = PD "/verify"
	for (k in D) { split(k, kk, SUBSEP); print kk[1] "\t" kk[2] "\t" D[k] > F }
	close(F)
	F = PD "/times"
	for (k in T) { split(k, kk, SUBSEP); print kk[1] "\t" kk[2] "\t" T[k] > F }
	close(F)
}' "$RES"

fact() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$PD/facts" 2>/dev/null; }

# ---- plots -----------------------------------------------------------------
plots=()
if command -v gnuplot >/dev/null; then
	for f in "$PD"/ratios-*.dat; do
		[ -f "$f" ] || continue
		c=$(basename "$f" .dat); c=${c#ratios-}
		png=$OUT/ratios-$c.png
		ncol=$(head -n 1 "$f" | wc -w)
		gnuplot <<-EOF 2>>"$PD/gnuplot.err" && plots+=("ratios-$c.png")
			set terminal pngcairo size 1000,520 font ",10"
			set output "$png"
			set title "case $c: throughput / the raw cache device (median of paired ratios)"
			set style data histograms
			set style histogram clustered gap 1
			set style fill solid 0.85 border -1
			set datafile missing "-"
			set yrange [0:*]
			set grid ytics
			set key outside right top
			set ylabel "x raw cache device"
			set arrow from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 2 lc rgb "red"
			plot for [i=2:$ncol] "$f" using i:xtic(1) title columnhead
		EOF
	done
	for c in $(ls "$PD" | sed -n 's/^zipf-\(.*\)-dm-bcache\.dat$/\1/p; s/^zipf-\(.*\)-bcache\.dat$/\1/p; s/^zipf-\(.*\)-dm-cache\.dat$/\1/p' | sort -u); do
		png=$OUT/zipf-$c.png
		cmd=
		for nc in dm-bcache:#0072b2 bcache:#d55e00 dm-cache:#009e73; do
			n=${nc%:*} col=${nc#*:}
			[ -f "$PD/zipfc-$c-$n.dat" ] && cmd+="${cmd:+, }\"$PD/zipfc-$c-$n.dat\" using 1:2 with linespoints lw 2 lc rgb \"$col\" title \"$n (counters)\""
			[ -f "$PD/zipf-$c-$n.dat" ] && cmd+="${cmd:+, }\"$PD/zipf-$c-$n.dat\" using 1:2 with lines dt 2 lc rgb \"$col\" title \"$n (latency)\""
		done
		[ -n "$cmd" ] || continue
		gnuplot <<-EOF 2>>"$PD/gnuplot.err" && plots+=("zipf-$c.png")
			set terminal pngcairo size 900,500 font ",10"
			set output "$png"
			set title "case $c: zipf 1.1 random 4k reads from cold: hit ratio per second"
			set datafile missing "-"
			set xlabel "seconds"
			set ylabel "hit ratio"
			set yrange [0:1]
			set grid
			set key bottom right
			plot $cmd
		EOF
	done
fi

# ---- the report --------------------------------------------------------------

# The scale case (bench/guest/scale.sh): a row per cache size, and each
# cost's growth per GiB cached, extrapolated to 2 TiB.
awk '
$1 == "SC" && $3 == 0 { g[$4] = $5; next }
$1 == "SC" { v[$3, $4] = $5; if (!($3 in seen)) { seen[$3] = 1; sz[++n] = $3 } }
$1 == "SL" { l[$3, $4] = $6 " / " $7; lc[$3, $4] = $8 ($9 == "" ? "" : "; " $10 "/" $9 " nolock")
	lw[$3, $4] = (lw[$3, $4] == "" ? "" : lw[$3, $4] ", ") $6 " / " $7 }
$1 == "SW" { w[$3, $4] = (w[$3, $4] == "" ? "" : w[$3, $4] ", ") $5 " (" $6 ")"; sw = 1 }
function mem(s) { return (v[s, "mem_slab_kib"] + v[s, "mem_vmalloc_kib"]) / 1024 }
function memcp(s) { return (v[s, "mem_cp_slab_kib"] + v[s, "mem_cp_vmalloc_kib"]) / 1024 }
function gib(s) { return v[s, "filled_kib"] / 1048576 }
function slope(k,    a, b, d) {	# per GiB cached, from the smallest to the largest size
	a = sz[1]; b = sz[n]; d = gib(b) - gib(a)
	if (n < 2 || d <= 0) return ""
	if (k == "mem")
		return (mem(b) - mem(a)) / d
	if (k == "memcp")
		return (memcp(b) - memcp(a)) / d
	return (v[b, k] - v[a, k]) / d
}
END {
	if (!n) exit
	print "\n## Scale: the index at several cache sizes (case `scale`)\n"
	print "dm-bcache alone, on caches of each size (make-bcache defaults: 512 KiB buckets), each filled by 4k random read misses over 80% of it (one 4 KiB extent per key; fill s: how long that took). Rows named SIZEvN: a cache of on-disk format N, each size in each format in turn in the same boot. Memory: slab + vmalloc growth over the fill, page cache dropped. open: the constructor on the filled cache (the bucket states and the root; the whole index before 2098278), and on the fresh one, and the nodes it read. gc: the `gc` message (a GC pass, then a checkpoint); checkpoint: the `checkpoint` message (a pass only if one is due); IO waits for either. Latency: the reads of a 4k 90/10 read/write QD1 run over the filled set, p99.9 / max in us: alone, beside a shell spinning on a CPU (the guest has two vCPUs on a host of two cores: what any busy thread costs the reads, the floor for the next columns), and beside those messages sent back to back (in brackets: how many ran; of the index nodes compacted meanwhile, how many while lookups went on, the rest making every IO wait); then beside `gc` messages again with `read_unlocked=N`, every index node read with the index locked (the way before 2026-12-05): with a node budget smaller than the index, the difference is what reading nodes unlocked saves.\n"
	if ("node_cache_mb" in g)
		printf "node_cache_mb: %s (-1: an eighth of RAM). After the checkpoints: the memory once every leaf is clean, and the nodes resident / read from disk so far.\n\n", g["node_cache_mb"]
	if (g["cache_delay_ms"] > 0)
		printf "The cache device is behind dm-delay: %s ms on every read and write.\n\n", g["cache_delay_ms"]
	print "| cache GiB | cached MiB | fill s | nodes in memory | slab+vmalloc MiB | MiB per GiB cached | after checkpoints MiB | nodes resident / read | open s (empty), nodes read | gc s | checkpoint s | read p99.9 / max us, alone | beside a busy CPU | during gc | during checkpoint | during gc, nodes read locked |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		s = sz[i]
		printf "| %s | %.0f | %s | %s | %.1f | %s | %.1f | %s / %s | %s (%s), %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s (%s) |\n",
			s, v[s, "filled_kib"] / 1024, v[s, "fill_s"], v[s, "btree_nodes"], mem(s),
			(gib(s) > 0 ? sprintf("%.2f", mem(s) / gib(s)) : "-"), memcp(s),
			v[s, "nodes_resident"], v[s, "nodes_read"],
			v[s, "open_s"], v[s, "open_empty_s"], v[s, "open_nodes_read"], v[s, "gc_s"],
			v[s, "checkpoint_s"],
			l[s, "idle"], (l[s, "busy"] == "" ? "-" : l[s, "busy"]), l[s, "gc"], lc[s, "gc"],
			l[s, "checkpoint"], lc[s, "checkpoint"],
			l[s, "gc-locked"], lc[s, "gc-locked"]
	}
	if (sw) {
		print "\nInserts: the same reads beside 4k random writes at QD8 over the filled set (writethrough: each write an index insert), with `shared_inserts=Y` (an insert into a leaf in memory with room locks that leaf only) and `=N` (every insert takes the whole index, the way before 2026-12-06), run in turn Y, N, Y, N in the same boot; both runs listed. Writes/s, and in brackets how many inserts went in shared.\n"
		print "| cache GiB | read p99.9 / max us beside writes, shared | writes/s (shared) | read p99.9 / max us beside writes, exclusive | writes/s (shared) |"
		print "|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			s = sz[i]
			printf "| %s | %s | %s | %s | %s |\n", s, lw[s, "writes"], w[s, "writes"],
				lw[s, "writes-exclusive"], w[s, "writes-exclusive"]
		}
	}
	# rows of one size in two formats (4v2, 4v3): no growth to draw
	if (n < 2 || sz[1] !~ /^[0-9]+$/ || sz[n] !~ /^[0-9]+$/) exit
	printf "\nGrowth per GiB cached (from %s to %s GiB), and extrapolated to 2 TiB cached as 4 KiB extents: ", sz[1], sz[n]
	split("mem memcp open_s gc_s checkpoint_s", k, " ")
	split("MiB of memory|MiB of memory after checkpoints|s of open|s of gc stall|s of checkpoint stall", u, "|")
	for (i = 1; i <= 5; i++) {
		d = slope(k[i])
		printf "%s%s", (i > 1 ? "; " : ""), (d == "" ? "-" : sprintf("%.3f %s per GiB, %.0f at 2 TiB", d, u[i], d * 2048))
	}
	print "."
}' "$RES" >"$PD/scale.md"

{
	echo "# dm-bcache benchmark"
	echo
	echo "Generated by \`make bench\` (bench/run.sh). Ratios, not assertions: every figure comes from one guest boot."
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| date (guest, UTC) | $(fact date) |"
	echo "| kernel | $(fact kernel | tr '_' ' ') |"
	echo "| fio | $(fact fio) |"
	echo "| dmsetup | $(fact dmsetup | tr '_' ' ') |"
	echo "| dm targets | $(fact targets | sed 's/,$//; s/,/, /g') |"
	echo "| mainline bcache-tools | $(fact bcache_tools) |"
	echo "| guest | $(fact qemu), TCG (\`-accel tcg -cpu max\`), $(fact cpus | awk '{ print $1 }') vCPUs ($(fact cpus | cut -d' ' -f2- | tr '_' ' ')), $(( $(fact mem_kib) / 1024 )) MiB, clocksource $(fact clocksource) |"
	echo "| host | $(fact host); shared with other QEMU runs, so absolute numbers are noisy |"
	echo "| parameters | $(fact params) |"
	echo "| origin disk | $(fact origin) (a sparse file under \$BUILD/bench, QEMU cache=writeback) |"
	echo "| guest time | $(fact guest_seconds) s |"
	echo
	cat <<-'EOF'
	## Method

	- One guest boot. For each case, the contenders run one after another,
	  each set up fresh on the **same** devices: cache `/dev/ram0` (brd) or the
	  shm virtio disk, origin `borigin` = dm-delay over the virtio disk
	  `origin` (read and write delay as the case says; 0 ms = plain remap).
	- Contenders: the raw cache device (the limit), the raw origin (the floor),
	  dm-bcache (`make-bcache -b 128k -w 4k`, sequential_cutoff 4 MiB),
	  mainline bcache (`make-bcache -C -B -b 128k -w 4k`, writethrough,
	  sequential_cutoff 4 MiB, congestion bypass off), dm-cache (smq,
	  writethrough, 32 KiB blocks, the minimum; metadata on a second brd),
	  dm-writecache (ssd mode, 4 KiB blocks: a writeback cache, write jobs only),
	  dm-linear over the cache device (the CPU baseline). Buckets are 128 KiB
	  for both bcaches because mainline refuses a cache of fewer than 513
	  buckets.
	- In `brd-fast` and `shm-fast`, every measured repetition runs **side by
	  side** with the same job on a **reference device** identical to the
	  cache device (another brd, or another shm virtio disk): one fio run, two
	  job groups at once, so both see the same host load at the same moment.
	  "x raw cache (paired)" is the median over the repetitions of
	  (contender / its simultaneous reference); in a TCG guest everything is
	  CPU-bound, so this is the ratio of the cost per IO. "x raw cache
	  (medians)" is the plain ratio of medians to the raw cache device run
	  on its own turn (shown for transparency; it carries the host's drift
	  between turns). `brd-hdd` jobs are bound by the origin's 8 ms
	  (wall-clock time, which the host's load does not stretch): they run
	  alone, and their ratios are ratios of medians. "x best peer" divides
	  by the best other cache (bcache, dm-cache, and dm-writecache in the
	  write jobs: note that it is a writeback cache, the others write
	  through).
	- The working sets are warmed until a pass of reads hits >= 99% by the
	  contender's counters (dm-bcache and dm-cache: their status; mainline
	  bcache: its /dev/bcache0 reads minus the origin's, from the block layer
	  stats, since its own stats_total are folded in only every 13.6 s).
	  smq promotes only what is hit again and moves at most
	  migration_threshold at a time, so it may need several passes. The
	  sequential jobs' data is cached by 128 KiB reads (one bucket) at QD4:
	  mainline bcache with 1024 buckets keeps a free reserve of one bucket
	  and does not wait for a bucket to fill a read miss, so it drops most
	  misses that span buckets (1 MiB reads hardly get cached at all).
	- Hit-path and sequential jobs run in `brd-fast` (cached data: the
	  origin's speed does not matter).
	- Writes run with fio's serialize_overlap (never two writes in flight to
	  the same block), so that the verify step can demand cache == origin.
	- "median" and "range" are over the repetitions; "mean lat" is fio's mean
	  total latency.
	EOF
	echo
	echo "## Targets (reported, not asserted)"
	echo
	cat "$PD/targets.md"
	cat "$PD/body.md"
	cat "$PD/scale.md"
	echo
	echo "## Plots"
	echo
	if [ ${#plots[@]} -eq 0 ]; then
		echo "(none: gnuplot missing or failed; see plotdata/gnuplot.err)"
	else
		for p in "${plots[@]}"; do echo "- \`$p\`"; done
	fi
	echo
	echo "## Data checks"
	echo
	if [ -s "$PD/verify" ]; then
		echo "After its jobs, each read cache's device was read back (1 MiB direct reads) and compared with the origin over the working sets it cached:"
		echo
		sort "$PD/verify" | awk -F'\t' '{ split($3, a, " "); printf "- %s, %s: %s (regions offset:MiB %s)\n", $1, $2, (a[1] == "ok") ? "same as the origin" : "**DIFFERENT FROM THE ORIGIN**", a[2] }'
	else
		echo "(no verify step ran)"
	fi
	echo
	echo "## Problems"
	echo
	if [ -s "$PD/errors" ]; then
		echo "What failed in the guest:"
		echo
		sed 's/^/- /' "$PD/errors"
	else
		echo "- no set-up or job failed"
	fi
	if [ -n "$(tr -d '[:space:]' <"$PD/problems")" ]; then
		echo "- **kernel problems on the console:**"
		echo
		echo '```'
		cat "$PD/problems"
		echo '```'
	else
		echo "- no kernel problem (WARN, BUG, oops, lockdep, hung task ...) on the console"
	fi
	echo
	echo "## Wall time per contender (s)"
	echo
	sort "$PD/times" | awk -F'\t' '{ printf "%s%s %s: %s", (NR > 1 ? ", " : ""), $1, $2, $3 } END { print "" }'
} >"$REPORT"
echo "bench/report.sh: $REPORT${plots:+ and ${#plots[@]} plot(s)}"
