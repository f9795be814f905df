#!/usr/bin/env python3
"""Render a terminal capture (text with ANSI SGR colours) to a PNG.

A documentation tool, not run by CI. The screenshots in docs/images/ come
from a real run in tmux:

    tmux -L shots -f /dev/null new-session -d -x 72 -y 24 \\
        'flowrun workflows/downloads.yaml --output tty; sleep 600'
    tmux -L shots capture-pane -e -p > live.ansi        # mid-run
    python3 docs/images/render-terminal.py live.ansi docs/images/live-view.png

`capture-pane -e` keeps the colours as SGR escape sequences; this script
understands the ones tmux writes (bold, dim, the 8/16 colours, 256 colours,
24-bit colours, reset). Glyphs DejaVu Sans Mono lacks (the braille spinner)
come from DejaVu Sans.

Needs Pillow and fontTools: pip install pillow fonttools
"""

import argparse
import re
import sys

from fontTools.ttLib import TTFont
from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
REGULAR = ["DejaVuSansMono.ttf", "DejaVuSans.ttf"]
BOLD = ["DejaVuSansMono-Bold.ttf", "DejaVuSans-Bold.ttf"]

BACKGROUND = (30, 32, 40)
FOREGROUND = (220, 223, 228)
TITLE_BAR = (52, 55, 66)
# The 16 colours, a soft palette (normal, then bright).
PALETTE = [
    (40, 42, 54), (235, 100, 100), (120, 200, 120), (230, 190, 90),
    (100, 150, 240), (200, 120, 220), (90, 200, 210), (200, 200, 200),
    (100, 104, 120), (255, 130, 130), (150, 230, 150), (255, 220, 120),
    (130, 180, 255), (230, 150, 250), (120, 230, 240), (255, 255, 255),
]

SGR = re.compile(r"\x1b\[([0-9;]*)m")
OTHER_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def color_256(n):
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    level = 8 + (n - 232) * 10
    return (level, level, level)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bold = False
        self.dim = False

    def apply(self, params):
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                self.reset()
            elif code == 1:
                self.bold = True
            elif code == 2:
                self.dim = True
            elif code == 22:
                self.bold = self.dim = False
            elif 30 <= code <= 37:
                self.fg = PALETTE[code - 30]
            elif 90 <= code <= 97:
                self.fg = PALETTE[code - 90 + 8]
            elif code == 39:
                self.fg = None
            elif code == 38 and i + 2 < len(codes) and codes[i + 1] == 5:
                self.fg = color_256(codes[i + 2])
                i += 2
            elif code == 38 and i + 4 < len(codes) and codes[i + 1] == 2:
                self.fg = tuple(codes[i + 2:i + 5])
                i += 4
            i += 1

    def color(self):
        color = self.fg or FOREGROUND
        if self.dim:
            color = tuple((c + b) // 2 for c, b in zip(color, BACKGROUND))
        return color


class Fonts:
    """The first font of a list that has a glyph, per character."""

    def __init__(self, size):
        self.faces = {}
        for bold, names in ((False, REGULAR), (True, BOLD)):
            self.faces[bold] = [
                (ImageFont.truetype(FONT_DIR + name, size), TTFont(FONT_DIR + name).getBestCmap())
                for name in names
            ]

    def font(self, char, bold):
        for font, cmap in self.faces[bold]:
            if ord(char) in cmap:
                return font
        return self.faces[bold][0][0]


def parse(text):
    """Lines of (char, color, bold) cells."""
    style = Style()
    lines = []
    for raw in text.rstrip("\n").split("\n"):
        cells = []
        position = 0
        for match in SGR.finditer(raw):
            chunk = OTHER_ESCAPE.sub("", raw[position:match.start()])
            cells += [(c, style.color(), style.bold) for c in chunk]
            style.apply(match.group(1))
            position = match.end()
        chunk = OTHER_ESCAPE.sub("", raw[position:])
        cells += [(c, style.color(), style.bold) for c in chunk]
        lines.append(cells)
    while lines and not any(c != " " for c, _, _ in lines[-1]):
        lines.pop()
    return lines


def render(lines, columns, size, scale):
    fonts = Fonts(size * scale)
    regular = fonts.faces[False][0][0]
    cell_width = regular.getlength("M")
    ascent, descent = regular.getmetrics()
    cell_height = int((ascent + descent) * 1.15)
    padding = 14 * scale
    title = 28 * scale
    width = int(padding * 2 + cell_width * columns)
    height = int(title + padding * 2 + cell_height * len(lines))
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width, title], fill=TITLE_BAR)
    for index, color in enumerate([(237, 106, 94), (245, 191, 79), (98, 197, 84)]):
        x = padding + index * 20 * scale
        r = 6 * scale
        draw.ellipse([x - r, title / 2 - r, x + r, title / 2 + r], fill=color)
    for row, cells in enumerate(lines):
        y = title + padding + row * cell_height
        for column, (char, color, bold) in enumerate(cells[:columns]):
            if char == " ":
                continue
            x = padding + column * cell_width
            if char in "█░":
                # Block elements drawn as boxes, so the bar has no seams.
                shade = color if char == "█" else tuple((c + b) // 2 for c, b in zip(color, BACKGROUND))
                draw.rectangle([x, y + 2 * scale, x + cell_width - 0.5, y + cell_height - 3 * scale], fill=shade)
                continue
            draw.text((x, y), char, font=fonts.font(char, bold), fill=color)
    return image


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("capture", help="output of `tmux capture-pane -e -p` (- for stdin)")
    parser.add_argument("png")
    parser.add_argument("--columns", type=int, default=0, help="default: the widest line")
    parser.add_argument("--size", type=int, default=14, help="font size in points")
    parser.add_argument("--scale", type=int, default=2, help="2 for sharp text on high-density screens")
    args = parser.parse_args()
    text = sys.stdin.read() if args.capture == "-" else open(args.capture, encoding="utf-8").read()
    lines = parse(text)
    columns = args.columns or max((len(line) for line in lines), default=1)
    render(lines, columns, args.size, args.scale).save(args.png, optimize=True)


if __name__ == "__main__":
    main()
