#!/usr/bin/env bash
# Render report pages with headless Chromium and save screenshots, to look at them as a person
# would (not run by CI: Chromium is not installed there; `apt-get install -y chromium`).
#
#   tests/cli/report/render.sh BUILD_DIR OUT_DIR [PAGE.html ...]
#
# Without pages it renders demo_report's variants: the default 8-stage plan, a 64-stage OOM
# case and a hostile model name. For each page: NAME-1366x768.png (what a laptop shows first)
# and NAME-full.png (the whole page at 1366 wide, cut to its height), plus NAME-800.png (a
# narrow window) to check that nothing overflows.
set -euo pipefail
build=${1:?usage: render.sh BUILD_DIR OUT_DIR [PAGE.html ...]}
out=${2:?usage: render.sh BUILD_DIR OUT_DIR [PAGE.html ...]}
shift 2
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
    echo "render.sh: no chromium (apt-get install -y chromium)" >&2
    exit 77
fi
mkdir -p "$out"
# Pillow cuts the full-page shot to the page (Debian: python3-pil, for /usr/bin/python3).
py=:
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import PIL' 2>/dev/null; then py=$p; break; fi
done
[ "$py" = : ] && echo "render.sh: no Pillow, full-page shots keep their 6000 px height" >&2
pages=("$@")
if [ ${#pages[@]} -eq 0 ]; then
    demo="$build/tests/cli/report/demo_report"
    "$demo" "$out/demo.html"
    "$demo" "$out/demo-oom64.html" --stages 64 --oom --points 3000 --layouts 12
    "$demo" "$out/demo-hostile.html" --stages 3 --points 7 --layouts 1 \
        --name '<script>alert("x")</script> a-very-long-model-name-that-goes-on-and-on-and-on-and-on-forever'
    pages=("$out/demo.html" "$out/demo-oom64.html" "$out/demo-hostile.html")
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shot() { # page png width height
    "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
        --force-device-scale-factor=1 --window-size="$3,$4" --screenshot="$2" "file://$(realpath "$1")" \
        >/dev/null 2>&1
}
for page in "${pages[@]}"; do
    name=$(basename "$page" .html)
    shot "$page" "$out/$name-1366x768.png" 1366 768
    shot "$page" "$out/$name-800.png" 800 1400
    # Full page: render tall, then cut the empty bottom (the page background is #F5F5F2).
    shot "$page" "$out/$name-full.png" 1366 6000
    "$py" - "$out/$name-full.png" <<'PY' || true
import sys
from PIL import Image
p = sys.argv[1]
im = Image.open(p).convert("RGB")
w, h = im.size
px = im.load()
bg = px[0, h - 1]
y = h - 1
while y > 0 and all(px[x, y] == bg for x in range(0, w, 7)):
    y -= 1
im.crop((0, 0, w, min(h, y + 24))).save(p)
PY
    echo "$out/$name-1366x768.png $out/$name-full.png $out/$name-800.png"
done
