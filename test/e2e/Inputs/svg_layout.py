"""Checks the layout of mixc's SVG plots as a reader sees them:

  svg_layout.py FILE...   every text fits inside the picture (its width
                          estimated at 0.55 em a character; rotated labels by
                          their anchor and direction), no two texts overlap,
                          the value axis has tick values, and the drawing
                          reaches near the picture's right and bottom edges
                          (no band of empty picture wider than 15 %).
"""
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def text_box(t, base):
    """(left, top, right, bottom) of an unrotated text, or None when rotated."""
    if t.get("transform"):
        return None
    x, y = float(t.get("x")), float(t.get("y"))
    size = float(t.get("font-size", base))
    w = 0.55 * size * len(t.text or "")
    left = {"middle": x - w / 2, "end": x - w}.get(t.get("text-anchor"), x)
    return left, y - 0.75 * size, left + w, y + 0.2 * size


def rotated_end(t, base):
    """The anchor and far end of a rotated text (translate(x,y) rotate(a))."""
    x, y = map(float, re.search(r"translate\(([-\d.]+),([-\d.]+)\)", t.get("transform")).groups())
    a = math.radians(float(re.search(r"rotate\(([-\d.]+)\)", t.get("transform")).group(1)))
    w = 0.55 * float(t.get("font-size", base)) * len(t.text or "")
    if t.get("text-anchor") == "middle":
        return (x - math.cos(a) * w / 2, y - math.sin(a) * w / 2), (x + math.cos(a) * w / 2, y + math.sin(a) * w / 2)
    return (x, y), (x + math.cos(a) * w, y + math.sin(a) * w)


def numbers(s):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", s or "")]


def extents(root, base):
    """The right-most and lowest points anything is drawn at."""
    right = bottom = 0.0
    for e in root.iter():
        tag = e.tag.replace(NS, "")
        xs, ys = [], []
        if tag == "text":
            box = text_box(e, base)
            if box:
                xs, ys = [box[2]], [box[3]]
            else:
                (x0, y0), (x1, y1) = rotated_end(e, base)
                xs, ys = [x0, x1], [y0, y1]
        elif tag == "rect" and not str(e.get("width", "")).endswith("%"):
            xs = [float(e.get("x", 0)) + float(e.get("width"))]
            ys = [float(e.get("y", 0)) + float(e.get("height"))]
        elif tag == "line":
            xs, ys = [float(e.get("x1")), float(e.get("x2"))], [float(e.get("y1")), float(e.get("y2"))]
        elif tag == "circle":
            xs, ys = [float(e.get("cx")) + float(e.get("r"))], [float(e.get("cy")) + float(e.get("r"))]
        elif tag == "polyline":
            v = numbers(e.get("points"))
            xs, ys = v[0::2], v[1::2]
        if xs:
            right, bottom = max(right, *xs), max(bottom, *ys)
    return right, bottom


def overlaps(a, b):
    # Two pixels of slack: neighbouring labels may touch.
    return a[0] < b[2] - 2 and b[0] < a[2] - 2 and a[1] < b[3] - 2 and b[1] < a[3] - 2


def check(path):
    root = ET.parse(path).getroot()
    width, height = float(root.get("width")), float(root.get("height"))
    base = float(root.get("font-size", "11"))
    texts = [t for t in root.iter(NS + "text") if (t.text or "").strip()]
    ticks = [t.text for t in texts if re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?k?", t.text.strip())]
    if len(set(ticks)) < 5:
        return f"{path}: {len(set(ticks))} distinct tick values, want at least 5"
    boxes = []
    for t in texts:
        box = text_box(t, base)
        if box is None:
            for x, y in rotated_end(t, base):
                if not (-1 <= x <= width + 1 and 0 <= y <= height + 1):
                    return f"{path}: '{t.text}' reaches ({x:.0f}, {y:.0f}), outside {width:.0f} x {height:.0f}"
            continue
        left, top, right, bottom = box
        if left < -1 or right > width + 1 or bottom > height + 1 or top < -1:
            return f"{path}: '{t.text}' at x {left:.0f}..{right:.0f}, y {top:.0f}..{bottom:.0f} falls outside {width:.0f} x {height:.0f}"
        for other_text, other in boxes:
            if overlaps(box, other):
                return f"{path}: '{t.text}' overlaps '{other_text}'"
        boxes.append((t.text, box))
    right, bottom = extents(root, base)
    if width - right > max(40, 0.15 * width):
        return f"{path}: nothing is drawn in the right {width - right:.0f} px of {width:.0f}"
    if height - bottom > max(30, 0.15 * height):
        return f"{path}: nothing is drawn in the bottom {height - bottom:.0f} px of {height:.0f}"
    return None


errors = [e for e in map(check, sys.argv[1:]) if e]
if errors:
    sys.exit("\n".join(errors))
print(f"{len(sys.argv) - 1} plots laid out")
