"""Render a virtual-phone screen (status bar, title, UI tree) to a phone-sized Pillow image."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from PIL import Image, ImageDraw, ImageFont

if TYPE_CHECKING:
    from devices.virtual.phone import Screen

BG, FG, MUTED, ACCENT, LINE = "#ffffff", "#1b1b1f", "#6b6b75", "#1a73e8", "#e3e3e8"


@lru_cache(maxsize=4)
def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the bitmap font, still legible
        return ImageFont.load_default()


def render(screen: Screen) -> Image.Image:
    from devices.virtual.phone import SCREEN_H, SCREEN_W, STATUS_H, TITLE_H

    img = Image.new("RGB", (SCREEN_W, SCREEN_H), BG)
    d = ImageDraw.Draw(img)
    st = screen.status
    d.rectangle((0, 0, SCREEN_W, STATUS_H), fill="#f1f3f4")
    d.text((12, 6), st["time"], fill=FG, font=_font(14))
    right = f"{'Wi-Fi  ' if st['wifi'] else ''}{st['battery']}%"
    d.text((SCREEN_W - 12 - d.textlength(right, font=_font(14)), 6), right, fill=FG, font=_font(14))
    d.text((16, STATUS_H + 12), screen.title, fill=FG, font=_font(22))
    d.line((0, STATUS_H + TITLE_H - 1, SCREEN_W, STATUS_H + TITLE_H - 1), fill=LINE)
    for e in screen.elements:
        x0, y0, x1, y1 = e.bounds
        if y1 <= STATUS_H + TITLE_H or y0 >= SCREEN_H:
            continue
        if e.kind == "header":
            d.text((16, y0 + 16), e.text.upper(), fill=ACCENT, font=_font(13))
            continue
        if e.kind == "button":
            d.rounded_rectangle((12, y0 + 5, x1 - 12, y1 - 5), radius=8, fill="#e8f0fe")
            d.text((24, y0 + 13), e.text, fill=ACCENT, font=_font(16))
        elif e.kind == "input":
            d.rectangle((12, y0 + 5, x1 - 12, y1 - 5), outline=MUTED)
            d.text((20, y0 + 13), e.text or "…", fill=MUTED, font=_font(15))
        else:
            d.text((16, y0 + 13), e.text, fill=FG if e.clickable or e.kind == "item" else MUTED, font=_font(16))
        if e.kind == "toggle":
            on = bool(e.checked)
            d.rounded_rectangle((x1 - 64, y0 + 12, x1 - 16, y1 - 12), radius=10, fill=ACCENT if on else "#bdc1c6")
            cx = x1 - 28 if on else x1 - 52
            d.ellipse((cx - 9, y0 + 13, cx + 9, y1 - 13), fill="#ffffff")
        d.line((0, y1 - 1, SCREEN_W, y1 - 1), fill=LINE)
    return img
