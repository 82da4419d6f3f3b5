#!/usr/bin/env python3
"""Checks report pages as a browser would meet them, independently of the C writer.

    check_html.py DEMO_REPORT          (TAP on stdout)

demo_report (tests/cli/report/demo_report.c) writes pages from synthetic data: the default 8-stage
plan, a 64-stage OOM case with 3000 candidates, and a hostile model name. Each page must:
  - parse as XML (strictly well-formed: every tag closed, attributes quoted, entities known);
  - nest correctly for an HTML parser (html.parser: no stray end tag, nothing left open);
  - fetch nothing: no http(s) or protocol-relative URL, no src/href, no script, no @import;
  - have unique ids, and every url(#id) point at one of them;
  - give every chart a viewBox, role="img" and an aria-label;
  - keep every visible SVG text inside its viewBox, and no two texts of a chart overlapping
    (text extents estimated at 0.6 em per character, as the writer does, plus the font's
    ascent and descent);
  - show the hostile name escaped.
"""
import html.parser
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

n = 0
failed = 0


def ok(cond, msg):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {msg}")
    sys.stdout.flush()
    return cond


VOID = {"meta", "br", "img", "input", "link", "hr"}


class Nesting(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.errors = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}> at {self.getpos()}")
        else:
            self.stack.pop()


SVG = "{http://www.w3.org/2000/svg}"


def local(tag):
    return tag.split("}")[-1]


def text_boxes(svg):
    """(x0, y0, x1, y1, text) of each visible <text> in an svg element, rotated ones excepted."""
    boxes = []
    for el in svg.iter():
        if local(el.tag) != "text":
            continue
        if "transform" in el.attrib:
            continue
        txt = "".join(t for t in el.itertext())
        # <title> children are tooltips, not drawn
        for t in el.iter():
            if local(t.tag) == "title" and t.text:
                txt = txt.replace(t.text, "", 1)
        txt = txt.strip()
        if not txt:
            continue
        cls = el.attrib.get("class", "")
        fs = float(el.attrib.get("font-size", 13 if "axis-title" in cls else 11 if "val" in cls else 12))
        w = 0.6 * fs * len(txt)
        x = float(el.attrib["x"])
        y = float(el.attrib["y"])
        anchor = el.attrib.get("text-anchor", "start")
        x0 = x - w if anchor == "end" else x - w / 2 if anchor == "middle" else x
        boxes.append((x0, y - 0.8 * fs, x0 + w, y + 0.22 * fs, txt))
    return boxes


def check_page(path, name, hostile=None, charts=4):
    data = open(path, encoding="utf-8").read()
    try:
        root = ET.fromstring(data[data.index("<html"):])
        xml_ok = True
    except ET.ParseError as e:
        root, xml_ok = None, False
        print(f"# {e}")
    ok(xml_ok, f"{name}: well-formed XML")
    p = Nesting()
    p.feed(data)
    p.close()
    ok(not p.errors and not p.stack, f"{name}: HTML nesting {p.errors[:2]} open={p.stack}")
    low = data.lower()
    ok(not re.search(r"https?:|//|<script|@import|<img|<link|<iframe|<object", low),
       f"{name}: no external reference or active content")
    ok(not re.search(r"<[^>]*\s(src|href|on[a-z]+)\s*=", low), f"{name}: no src, href or event attribute")
    if root is None:
        return
    # Inline SVG in HTML needs no namespace; ElementTree sees plain tags.
    ids = [el.attrib["id"] for el in root.iter() if "id" in el.attrib]
    ok(len(ids) == len(set(ids)), f"{name}: {len(ids)} ids, unique")
    refs = re.findall(r"url\(#([^)]+)\)", data)
    ok(all(r in ids for r in refs), f"{name}: {len(refs)} url(#...) references resolve")
    svgs = [el for el in root.iter() if local(el.tag) == "svg"]
    ok(len(svgs) == charts, f"{name}: {len(svgs)} charts (want {charts})")
    for i, svg in enumerate(svgs):
        vb = svg.attrib.get("viewBox", "")
        cls = svg.attrib.get("class", "?")
        ok(re.fullmatch(r"0 0 \d+ \d+", vb) and svg.attrib.get("role") == "img" and svg.attrib.get("aria-label"),
           f"{name}: {cls}: viewBox, role and aria-label")
        if not vb:
            continue
        W, H = (float(v) for v in vb.split()[2:])
        boxes = text_boxes(svg)
        outside = [b for b in boxes if b[0] < -0.5 or b[2] > W + 0.5 or b[1] < -0.5 or b[3] > H + 0.5]
        ok(not outside, f"{name}: {cls}: {len(boxes)} texts inside the viewBox {[b[4] for b in outside[:3]]}")
        clash = []
        for a in range(len(boxes)):
            for b in range(a + 1, len(boxes)):
                A, B = boxes[a], boxes[b]
                if A[0] < B[2] - 0.5 and B[0] < A[2] - 0.5 and A[1] < B[3] - 0.5 and B[1] < A[3] - 0.5:
                    clash.append((A[4], B[4]))
        ok(not clash, f"{name}: {cls}: no overlapping texts {clash[:3]}")
    if hostile:
        ok(hostile not in data and "&lt;script&gt;" in data, f"{name}: hostile name escaped")


def main():
    demo = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        pages = [
            ("demo", [], None),
            ("oom64", ["--stages", "64", "--oom", "--points", "3000", "--layouts", "12"], None),
            ("hostile", ["--stages", "3", "--points", "7", "--layouts", "1", "--name",
                         '<script>alert("x")</script> a-very-long-model-name-that-goes-on-and-on'],
             '<script>alert("x")</script>'),
            ("one-stage", ["--stages", "1", "--points", "1", "--layouts", "1"], None),
            ("512-stages", ["--stages", "512", "--points", "0", "--layouts", "64"], None),  # no candidate chart
        ]
        for name, args, hostile in pages:
            out = os.path.join(d, name + ".html")
            r = subprocess.run([demo, out] + args, capture_output=True, text=True)
            if not ok(r.returncode == 0 and os.path.exists(out), f"{name}: demo_report wrote the page {r.stderr.strip()}"):
                continue
            check_page(out, name, hostile, 3 if "--points" in args and args[args.index("--points") + 1] == "0" else 4)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
