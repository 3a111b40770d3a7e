"""Image files the command line draws into: a name matplotlib can write, a size memory holds.

A picture is checked before it is rendered: ``draw -o ''`` wrote ``.png``, ``-o fig`` (no
extension) guessed a format, and ``--dpi 100000`` asked Agg for hundreds of gigabytes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import FabricOptError

__all__ = ["MAX_PIXELS", "checked_dpi", "image_path"]

#: Most pixels a picture may have (10,000 x 10,000: 400 MB as RGBA); a larger --dpi asks for
#: gigabytes of memory. Agg itself refuses 2**16 pixels or more on a side.
MAX_PIXELS = 10**8


def image_path(text: str, flag: str = "-o/--output") -> Path:
    """``text`` as the path of an image file, or an error naming ``flag`` for an empty name or
    an extension matplotlib does not write (it would add ``.png`` to a bare name unasked).

    >>> image_path("fig.svg").suffix
    '.svg'
    """
    from matplotlib.backend_bases import FigureCanvasBase

    out = Path(text)
    types = sorted(FigureCanvasBase.get_supported_filetypes())
    if not text or not out.stem or out.suffix.lower().lstrip(".") not in types:
        raise FabricOptError(f"{flag} must be an image file name ending in ."
                             + ", .".join(types) + f" (e.g. fig.png), got {text!r}")
    return out


def checked_dpi(dpi: float, figure: Any = None) -> float:
    """``dpi`` checked: a finite number > 0 that keeps ``figure`` (when given) within
    :data:`MAX_PIXELS` and Agg's side limit; the error gives the largest dpi that fits.

    >>> checked_dpi(150.0)
    150.0
    """
    if not math.isfinite(dpi) or dpi <= 0:
        raise FabricOptError(f"--dpi must be a finite number > 0, got {dpi!r}")
    if figure is None:
        return dpi
    width, height = map(float, figure.get_size_inches())
    pixels = (width * dpi) * (height * dpi)  # Python floats: inf for a huge dpi, no error
    if pixels > MAX_PIXELS or max(width, height) * dpi >= 2**16:
        most = min(math.sqrt(MAX_PIXELS / (width * height)), (2**16 - 1) / max(width, height))
        raise FabricOptError(f"--dpi {dpi:g} makes a {width * dpi:,.0f} x {height * dpi:,.0f} "
                             f"pixel image of this {width:.3g} x {height:.3g} in figure; the "
                             f"limit is {MAX_PIXELS:,} pixels: at most --dpi {math.floor(most)}")
    return dpi
