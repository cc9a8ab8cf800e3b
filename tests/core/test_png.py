import numpy as np
import pytest

from core import png


def test_decode_png_round_trip():
    img = (np.arange(2 * 3 * 4).reshape(2, 3, 4) * 9).astype(np.uint8)
    assert np.array_equal(png.decode_png(png.encode_png(img)), img)


def test_decode_png_without_header_says_so():
    """A PNG whose IHDR chunk is missing (a damaged file) is refused with a ValueError naming the chunk, like the
    decoder's other refusals; it raised "cannot unpack non-iterable NoneType" (found by the type checker)."""
    data = png.encode_png((np.ones((2, 2, 4)) * 255).astype(np.uint8))
    start = data.index(b"IHDR") - 4
    size = int.from_bytes(data[start:start + 4], "big")
    damaged = data[:start] + data[start + 12 + size:]  # the IHDR chunk cut out
    with pytest.raises(ValueError, match="IHDR"):
        png.decode_png(damaged)
