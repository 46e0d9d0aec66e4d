# Sourced by the benchmark scripts: what they say of a set of measurements.
#
# ratio A B: A ÷ B as "1.23×" ("–" when B is not positive).
# median, range: of the numbers on stdin, one per line or space-separated
# (range prints "LOW–HIGH").

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "–" }'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END { print a[int((NR + 1) / 2)] }'; }
range() { tr ' ' '\n' | grep -v '^$' | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }
