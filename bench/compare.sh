#!/bin/sh
# compare.sh runs the benchmarks of package bench on two checkouts,
# interleaved, and prints one table of their metrics: "before" is a git
# revision, "after" the working tree. See doc.go.
#
#	bench/compare.sh [-k K] [-bench RE] [-benchtime T] [-o FILE] [-own] REV [-- TESTFLAGS]
set -eu

usage() {
	echo "usage: bench/compare.sh [-k K] [-bench RE] [-benchtime T] [-o FILE] [-own] REV [-- TESTFLAGS]" >&2
	exit 2
}

k=3
bench='^Benchmark(Startup|Call|Close|Idle)$'
benchtime=11x
out=
own=0
rev=
while [ $# -gt 0 ]; do
	case $1 in
	-k) [ $# -ge 2 ] || usage; k=$2; shift 2 ;;
	-bench) [ $# -ge 2 ] || usage; bench=$2; shift 2 ;;
	-benchtime) [ $# -ge 2 ] || usage; benchtime=$2; shift 2 ;;
	-o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	-own) own=1; shift ;;
	--) shift; break ;;
	-*) echo "compare.sh: unknown flag $1" >&2; usage ;;
	*) [ -z "$rev" ] || usage; rev=$1; shift ;;
	esac
done
[ -n "$rev" ] || usage
case $k in '' | *[!0-9]* | 0) echo "compare.sh: -k must be a positive number, not \"$k\"" >&2; exit 2 ;; esac

root=$(git rev-parse --show-toplevel)
commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || {
	echo "compare.sh: $rev is not a revision of $root" >&2
	exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
[ -n "$out" ] || out=$tmp/raw.txt

# The before tree is an export of REV (no worktree is registered). Unless
# -own is given it gets the working tree's bench/, so both sides run the
# same benchmarks against different code.
mkdir "$tmp/before"
git -C "$root" archive "$commit" | tar -x -C "$tmp/before"
if [ "$own" = 0 ]; then
	rm -rf "$tmp/before/bench"
	cp -R "$root/bench" "$tmp/before/bench"
fi
echo "building before ($rev = $(git -C "$root" rev-parse --short "$commit"))" >&2
(cd "$tmp/before" && go test -c -o "$tmp/before.test" ./bench)
echo "building after (working tree $root)" >&2
(cd "$root" && go test -c -o "$tmp/after.test" ./bench)

run() { # run SIDE ROUND [TESTFLAGS]: one run of one side's binary, in its bench dir
	side=$1 round=$2
	shift 2
	if [ "$side" = before ]; then dir=$tmp/before/bench; else dir=$root/bench; fi
	echo "## run $round $side load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') $(date -u +%H:%M:%S)" >>"$out"
	echo "run $round/$k: $side" >&2
	(cd "$dir" && "$tmp/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" "$@") >"$tmp/run.txt" 2>&1 || {
		cat "$tmp/run.txt" >&2
		echo "compare.sh: the $side run failed" >&2
		exit 1
	}
	cat "$tmp/run.txt" >>"$out"
	grep '^Benchmark' "$tmp/run.txt" | sed "s/^/$side /" >>"$tmp/lines.txt"
}

: >"$out"
: >"$tmp/lines.txt"
echo "# before $rev ($commit), after the working tree of $root; $k runs each, alternating; -bench '$bench' -benchtime $benchtime $*" >>"$out"
i=1
while [ "$i" -le "$k" ]; do
	if [ $((i % 2)) = 1 ]; then
		run before "$i" "$@"
		run after "$i" "$@"
	else
		run after "$i" "$@"
		run before "$i" "$@"
	fi
	i=$((i + 1))
done

# Each benchmark line is "NAME-P ITERATIONS (VALUE UNIT)...": the table has
# one row per benchmark and unit (ns/op left out: a round mixes sides),
# with the median of the K runs of each side, their range, and
# after/before.
awk -v k="$k" '
function median(s,    n, a, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{
	side = $1; name = $2; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (f = 4; f < NF; f += 2) {
		if ($(f+1) == "ns/op" || $(f+1) == "B/op" || $(f+1) == "allocs/op") continue
		key = name " " $(f+1)
		if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
		v[side, key] = v[side, key] " " $f
	}
}
END {
	printf "%-58s %10s %21s %10s %21s %7s\n", "metric (median of " k " runs)", "before", "(min-max)", "after", "(min-max)", "a/b"
	for (i = 1; i <= nk; i++) {
		key = keys[i]
		b = median(v["before", key]); blo = lo; bhi = hi
		a = median(v["after", key]); alo = lo; ahi = hi
		r = b != 0 ? sprintf("%.3f", a / b) : "-"
		printf "%-58s %10.4g %10.4g-%-10.4g %10.4g %10.4g-%-10.4g %7s\n", key, b, blo, bhi, a, alo, ahi, r
	}
}' "$tmp/lines.txt" | tee -a "$out"
