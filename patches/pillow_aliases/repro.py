"""The image logger of the latent-diffusion era (ldm's and taming's sample grids with a caption drawn in): written for
Pillow < 10, it downsizes with Image.ANTIALIAS and centres the caption with ImageDraw.textsize and font.getsize.

Without zeropatch, on Pillow >= 10:
  AttributeError: module 'PIL.Image' has no attribute 'ANTIALIAS'
With `zeropatch run -- python repro.py` it runs: ANTIALIAS is LANCZOS (the same pixels) and the caption is measured
as Pillow 9.5 measured it.
"""

import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFont


def log_sample_with_caption(sample, caption, size=64):
    image = Image.fromarray(sample).resize((size, size), Image.ANTIALIAS)  # as the loggers downsized their grids
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    width, height = draw.textsize(caption, font=font)
    draw.text(((size - width) // 2, size - height - 2), caption, fill=(255, 255, 255), font=font)
    return image, (width, height), font.getsize(caption)


def main():
    sample = (np.random.default_rng(0).random((96, 96, 3)) * 255).astype(np.uint8)
    image, measured, font_size = log_sample_with_caption(sample, "step 100")
    lanczos = Image.fromarray(sample).resize((64, 64), Image.Resampling.LANCZOS)
    if Image.ANTIALIAS != Image.Resampling.LANCZOS or image.size != lanczos.size:
        sys.exit(f"repro: Image.ANTIALIAS is {Image.ANTIALIAS!r}, not LANCZOS")
    if measured != font_size or not 0 < measured[0] < 64 or not 0 < measured[1] < 20:
        sys.exit(f"repro: the caption measured {measured} by the draw and {font_size} by the font")
    print(f"repro: sample logged with its caption ({measured[0]}x{measured[1]} px, ANTIALIAS as LANCZOS)")


if __name__ == "__main__":
    main()
