#!/bin/sh
# How the fixtures of tests/test_mbox.py were made (run once, checked in;
# rerun only to change them): a three-patch series on tree/, posted as
#   series.mbox  git format-patch --stdout --cover-letter (From <sha> lines)
#   dir/         git format-patch -o (v2-0000-cover-letter.patch, v2-000N-*.patch)
# The other forms were written from these by hand (see README).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
export GIT_AUTHOR_NAME="Zoë Example" GIT_AUTHOR_EMAIL=zoe@example.org
export GIT_COMMITTER_NAME=kexpand GIT_COMMITTER_EMAIL=kexpand@localhost
cp -r "$here/tree" "$tmp/r"
cd "$tmp/r"
git init -q
git add -A
GIT_AUTHOR_DATE="2023-09-18T08:00:00+00:00" GIT_COMMITTER_DATE="2023-09-18T08:00:00+00:00" \
    git commit -q -m "demo: base"

commit() {   # date, subject, body
    GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -a -m "$2" -m "$3"
}

sed -i 's|^#define demo_max.*|&\
\
/* demo_umin - the smaller of two values, compared as unsigned */\
#define demo_umin(x, y) demo_min((x) + 0u + 0ul, (y) + 0u + 0ul)|' include/demo.h
commit "Mon, 18 Sep 2023 08:16:30 +0000" "demo: Add demo_umin()" \
"demo_min() compares its arguments as they are.
From the start, a signed and an unsigned value compared wrong.

demo_umin() zero-extends both first.

Signed-off-by: Zoë Example <zoe@example.org>"

sed -i 's|return demo_min(demo_max(v, lo), hi);|int r = demo_max(v, lo);\
\
	return demo_min(r, hi);|' lib/demo.c
commit "Mon, 18 Sep 2023 08:17:10 +0000" "demo: Split the naïve demo_clamp()" \
"The naïve one-line clamp nests demo_min() in demo_max(): one line of source that the preprocessor expands to the product of both.
Keep the intermediate value in a variable.

Signed-off-by: Zoë Example <zoe@example.org>"

sed -i 's|^#endif|#define demo_clamp_t(t, v, lo, hi) demo_min((t)(v) > (t)(lo) ? (t)(v) : (t)(lo), (t)(hi))\
\
&|' include/demo.h
printf '\nint demo_clamp_u8(int v)\n{\n\treturn demo_clamp_t(unsigned char, v, 0, 255);\n}\n' >> lib/demo.c
commit "Mon, 18 Sep 2023 08:18:40 +0000" "demo: Add demo_clamp_t()" \
"A clamp with the type given, for the callers that want one.

Signed-off-by: Zoë Example <zoe@example.org>"

cover_fix() {
    sed -i -e 's/\*\*\* SUBJECT HERE \*\*\*/demo: Make the demo helpers safer/' \
        -e 's/\*\*\* BLURB HERE \*\*\*/The demo helpers compare mixed types wrong and expand to too much.\
This series adds demo_umin() and demo_clamp_t() and splits demo_clamp()./' "$@"
}
# the cover letter is the committer's: the author's, at a fixed time
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_COMMITTER_DATE="Mon, 18 Sep 2023 08:15:00 +0000"
git format-patch --stdout --cover-letter -v2 --subject-prefix="PATCH next" \
    --signature=2.39.5 HEAD~3 > "$here/series.mbox"
cover_fix "$here/series.mbox"
rm -rf "$here/dir"
git format-patch -q -o "$here/dir" --cover-letter -v2 --subject-prefix="PATCH next" \
    --signature=2.39.5 HEAD~3 >/dev/null
cover_fix "$here"/dir/*cover-letter.patch
