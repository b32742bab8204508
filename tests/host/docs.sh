#!/bin/bash
# Host: the admin guide (Documentation/dm-bcache.rst) agrees with the code
# and the tests. Its tables (between the ".. begin X" / ".. end X"
# comments) list the status fields, the tunables, the messages and the
# table arguments; these must equal the lists that
# tests/scenarios/docs-example.sh checks against a real status line in
# QEMU, and the field names that tests/guest/dmb.sh and bcachectl use.
# Every key the guide documents must be in the module's sources, and every
# key the module parses (strcasecmp) in the guide. Every message the
# module logs (DMINFO, DMWARN, DMERR) is in the guide's list of kernel
# messages, and every line of that list is one the module logs. The
# example status lines have as many words as the guide's fields say. The
# guide is valid reStructuredText, if docutils is installed.
set -u
TOP=${DMB_TOP:?}
DOC=$TOP/Documentation/dm-bcache.rst
SCEN=$TOP/tests/scenarios/docs-example.sh
npass=0 nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }
same() { # DESC EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		bad "$1"
		echo "     | expected: $2"
		echo "     | actual:   $3"
	fi
}
flat() { tr -s ' \n\t' '   ' | sed 's/^ //; s/ $//'; }

for f in "$DOC" "$SCEN"; do
	[ -f "$f" ] || { bad "missing $f"; echo "$npass passed, $nfail failed"; exit 1; }
done

# The first COLS words of the rows of the simple table between
# ".. begin NAME" and ".. end NAME": not its borders, continuation lines
# or, in a table with three borders, its header row.
body() { # NAME COLS
	awk -v name="$1" -v cols="$2" '
		$0 == ".. begin " name { on = 1; next }
		$0 == ".. end " name { on = 0 }
		!on { next }
		/^=+( +=+)*$/ { border++; next }
		/^[^ ]/ && border >= 1 {
			r = $1
			for (i = 2; i <= cols; i++) r = r " " $i
			row[n + 0] = r; at[n + 0] = border; n++
		}
		END { for (i = 0; i < n + 0; i++) if (!(border == 3 && at[i] == 1)) print row[i] }' "$DOC"
}
# A list variable of the scenario: NAME='words ...' (may span lines).
slist() {
	awk -v name="$1" '
		index($0, name "=\x27") == 1 { on = 1; sub(/^[^\x27]*\x27/, "") }
		on { s = $0; if (sub(/\x27.*$/, "", s)) { print s; exit } print s }' "$SCEN" | flat
}

for m in "status fields" "status tunables" messages tunables "table arguments" \
	"kernel log"; do
	if grep -qx ".. begin $m" "$DOC" && grep -qx ".. end $m" "$DOC"; then
		ok "the guide marks its table of $m"
	else
		bad "the guide has no '.. begin $m' / '.. end $m' comments"
	fi
done

# --- status fields --------------------------------------------------------
fields=$(body "status fields" 2)
nums=$(echo "$fields" | awk '{ print $1 }' | flat)
want=$(seq 1 "$(echo "$fields" | grep -c .)" | flat)
same "status fields are numbered 1, 2, ... in order" "$want" "$nums"
names=$(echo "$fields" | awk '{ print $2 }' | flat)
same "the scenario's DOC_FIELDS are the guide's" "$names" "$(slist DOC_FIELDS)"
dmb=$(sed -n '/^DMB_FIELDS="/,/"$/p' "$TOP/tests/guest/dmb.sh" | sed 's/^DMB_FIELDS="//; s/"$//' | flat)
same "tests/guest/dmb.sh's DMB_FIELDS are the guide's" "$names" "$dmb"
ctl=$(sed -n '/^FIELDS="/,/"$/p' "$TOP/dmsetup-tables/bcachectl" | sed 's/^FIELDS="//; s/"$//' | flat)
same "bcachectl's FIELDS are the guide's" "$names" "$ctl"

tun=$(body "status tunables" 2 | awk '{ print $2 }' | flat)
same "the scenario's DOC_TUNABLES are the guide's status tunables" "$tun" "$(slist DOC_TUNABLES)"

# --- tunables, messages, table arguments ------------------------------------
tt=$(body tunables 1 | flat)
same "the tunables table lists the status line's tunables, in order" "$tun" "$tt"
msgs=$(body messages 1 | flat)
same "messages: the scenario's DOC_MESSAGES, then the tunables" \
	"$(slist DOC_MESSAGES) $tun" "$msgs"
args=$(body "table arguments" 1 | flat)
same "the scenario's DOC_ARGS are the guide's table arguments" "$args" "$(slist DOC_ARGS)"

# --- the module's sources ---------------------------------------------------
src=$(cat "$TOP"/dm-bcache/*.c)
for k in $args $msgs; do
	if grep -q "\"$k\"" <<<"$src"; then
		ok "\"$k\" is in the module's sources"
	else
		bad "the guide documents '$k', which no dm-bcache/*.c names"
	fi
done
parsed=$(grep -ho 'strcasecmp([^;]*"[a-z_]*")' "$TOP"/dm-bcache/*.c |
	sed 's/.*"\([a-z_]*\)")$/\1/' | sort -u)
for k in $parsed; do
	if grep -qw -- "$k" <<<"$args $msgs"; then
		ok "the module's key '$k' is documented"
	else
		bad "the module parses '$k' (dm-bcache/*.c), the guide's tables do not list it"
	fi
done

# --- kernel log ---------------------------------------------------------------
# The literal block between ".. begin kernel log" and ".. end kernel log",
# and the module's messages as extended regular expressions (a format's
# conversions match anything; "%s" alone, a logged error string, is left
# out). Error strings the module logs through "%s" count for the guide's
# side.
logdoc=$(awk '$0 == ".. begin kernel log" { on = 1; next }
	$0 == ".. end kernel log" { on = 0 }
	on && /^   [^ ]/ { sub(/^   /, ""); print }' "$DOC")
# shellcheck disable=SC2016 # sed expressions, not shell ones
to_re() { sed 's/[][\.*^$(){}+?|]/\\&/g; s/%[-0-9.]*[a-zA-Z][a-zA-Z]*/.*/g; s/^/^/; s/$/$/'; }
fmts=$(grep -ho 'DM\(INFO\|WARN\|ERR\|CRIT\)\(_LIMIT\)\?("[^"]*"' "$TOP"/dm-bcache/*.c |
	sed 's/^[^"]*"//; s/"$//' | grep -vx '%s' | sort -u | to_re)
errs=$(grep -ho 'error = "[^"]*"' "$TOP"/dm-bcache/*.c | sed 's/^[^"]*"//; s/"$//' |
	sort -u | to_re)
if [ -n "$logdoc" ] && [ -n "$fmts" ]; then
	ok "the guide lists $(echo "$logdoc" | wc -l) kernel messages, the module logs $(echo "$fmts" | wc -l)"
else
	bad "no kernel messages in the guide's list or in the module's sources"
fi
miss=0
while IFS= read -r re; do
	grep -Eq -- "$re" <<<"$logdoc" && continue
	bad "the module logs '$re' (dm-bcache/*.c), the guide's kernel log does not list it"
	miss=$((miss + 1))
done <<<"$fmts"
[ "$miss" -eq 0 ] && ok "every message the module logs is in the guide's kernel log"
miss=0
while IFS= read -r line; do
	found=
	while IFS= read -r re; do
		grep -Eq -- "$re" <<<"$line" && found=1 && break
	done <<<"$fmts
$errs"
	[ -n "$found" ] && continue
	bad "the guide's kernel log lists '$line', which the module does not log"
	miss=$((miss + 1))
done <<<"$logdoc"
[ "$miss" -eq 0 ] && ok "every line of the guide's kernel log is a message the module logs"

# --- example status lines ---------------------------------------------------
nf=$(echo "$names" | wc -w)
nt=$(echo "$tun" | wc -w)
words=$((3 + nf + 1 + 2 * nt))
n=0
while read -r line; do
	n=$((n + 1))
	same "example status line $n has $words words (3 + $nf fields + count + $nt pairs)" \
		"$words" "$(echo "$line" | wc -w)"
	same "example status line $n: the tunables' count is $nt" "$nt" \
		"$(echo "$line" | awk -v i=$((3 + nf + 1)) '{ print $i }')"
done < <(grep -E '^ *0 [0-9]+ bcache [0-9]+ [0-9]+ [0-9]+ [0-9]+/[0-9]+ ' "$DOC")
if [ "$n" -gt 0 ]; then
	ok "$n example status line(s) checked"
else
	bad "no example status line in the guide"
fi

# --- reStructuredText -------------------------------------------------------
rst=
for c in rst2html rst2html.py; do
	command -v "$c" >/dev/null 2>&1 && rst=$c && break
done
if [ -n "$rst" ]; then
	if out=$("$rst" --halt=warning --report=warning "$DOC" /dev/null 2>&1); then
		ok "$rst: no warnings"
	else
		bad "$rst: $out"
	fi
else
	echo "note: no rst2html (python3-docutils): the markup is not checked"
fi
if grep -n "@[A-Z_]\+@" "$DOC"; then bad "the guide has unfilled placeholders"; fi

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
