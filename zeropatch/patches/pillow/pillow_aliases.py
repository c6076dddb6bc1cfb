"""pillow_aliases: Pillow 9's resampling aliases and text-measuring methods are back, measuring as Pillow 9.5 did.

Breaks: Pillow 10.0 (July 2023) removed ``Image.ANTIALIAS``, ``Image.LINEAR`` and ``Image.CUBIC`` (and the image
categories ``Image.NORMAL`` / ``SEQUENCE`` / ``CONTAINER``), ``ImageDraw.textsize`` / ``multiline_textsize`` and the
fonts' ``getsize`` / ``getsize_multiline`` / ``getoffset``, deprecated since 9.1-9.2. Data pipelines and image loggers
of the latent-diffusion era (``img.resize(size, Image.ANTIALIAS)``, captions drawn into sample grids) stop:
"module 'PIL.Image' has no attribute 'ANTIALIAS'", "'ImageDraw' object has no attribute 'textsize'",
"'FreeTypeFont' object has no attribute 'getsize'".

Changes: each missing name is back with Pillow 9.5's meaning. The aliases are the same resampling filters
(``ANTIALIAS`` is ``Resampling.LANCZOS``: the same pixels), put back into ``PIL.Image`` (answered through its
``__getattr__``, as 9.5 answered them, never listed in ``dir()``). The methods are added to the classes that had them
and measure as 9.5 did, from today's ``getbbox`` and not from its successors' conventions: a FreeType ``getsize``
is the ink width and the height *from the ascender line* (9.5's historical vertical offset included), a multiline
size is lines times the height of "A" plus spacing, a rotated ``TransposedFont`` swaps them. Where Pillow still
has a name (9.x): not-needed. Not restored: Pillow >= 10.1's default font (``ImageFont.load_default()`` is a
FreeType font where FreeType is built in, 9.5's was a bitmap), which ``draw.text`` uses too; ``textsize`` measures
with the font the draw uses.
"""

from zeropatch._core import NotNeeded, Patch, lacks

# PIL.Image: old name -> the Resampling member (by name) or the category number it stood for in Pillow 9.5
IMAGE_NAMES = {"ANTIALIAS": "LANCZOS", "LINEAR": "BILINEAR", "CUBIC": "BICUBIC", "NORMAL": 0, "SEQUENCE": 1,
               "CONTAINER": 2}


def _split_lines(text):
    return text.split("\n" if isinstance(text, str) else b"\n")


def _has_newline(text):
    return ("\n" if isinstance(text, str) else b"\n") in text


def freetype_getsize(self, text, direction=None, features=None, language=None, stroke_width=0):
    """Pillow 9's FreeTypeFont.getsize: the ink width, and the height measured from the ascender line."""
    left, top, right, bottom = self.getbbox(text, "L", direction, features, language, stroke_width)
    return right - left, bottom + stroke_width


def freetype_getsize_multiline(self, text, direction=None, spacing=4, features=None, language=None, stroke_width=0):
    """Pillow 9's FreeTypeFont.getsize_multiline: the widest line, and lines times (the height of "A" + spacing)."""
    lines = _split_lines(text)
    line_spacing = self.getsize("A", stroke_width=stroke_width)[1] + spacing
    width = max(self.getsize(line, direction, features, language, stroke_width)[0] for line in lines)
    return width, len(lines) * line_spacing - spacing


def freetype_getoffset(self, text):
    """Pillow 9's FreeTypeFont.getoffset: where the ink starts, (left, top)."""
    left, top, _, _ = self.getbbox(text)
    return left, top


def bitmap_getsize(self, text, *args, **kwargs):
    """Pillow 9's ImageFont.getsize (a bitmap font): the text's width and height."""
    _, _, width, height = self.getbbox(text)
    return width, height


def transposed_getsize(self, text, *args, **kwargs):
    """Pillow 9's TransposedFont.getsize: the font's own size, swapped when rotated by 90 or 270 degrees."""
    from PIL import Image

    width, height = self.font.getsize(text)
    if self.orientation in (Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270):
        return height, width
    return width, height


def textsize(self, text, font=None, spacing=4, direction=None, features=None, language=None, stroke_width=0):
    """Pillow 9's ImageDraw.textsize: the font's getsize (the draw's font by default); multiline text line by line."""
    if _has_newline(text):
        return self.multiline_textsize(text, font, spacing, direction, features, language, stroke_width)
    font = self.getfont() if font is None else font
    return font.getsize(text, direction, features, language, stroke_width)


def multiline_textsize(self, text, font=None, spacing=4, direction=None, features=None, language=None,
                       stroke_width=0):
    """Pillow 9's ImageDraw.multiline_textsize: the widest line, and lines times (the height of "A" + spacing)."""
    lines = _split_lines(text)
    line_spacing = self.textsize("A", font=font, stroke_width=stroke_width)[1] + spacing
    width = max(self.textsize(line, font, spacing, direction, features, language, stroke_width)[0] for line in lines)
    return width, len(lines) * line_spacing - spacing


# module -> {class name: {method name: what Pillow 9.5 had there}}
METHODS = {
    "PIL.ImageDraw": {"ImageDraw": {"textsize": textsize, "multiline_textsize": multiline_textsize}},
    "PIL.ImageFont": {"FreeTypeFont": {"getsize": freetype_getsize, "getsize_multiline": freetype_getsize_multiline,
                                       "getoffset": freetype_getoffset},
                      "ImageFont": {"getsize": bitmap_getsize},
                      "TransposedFont": {"getsize": transposed_getsize}},
}


def _put_back_image_names(patcher, image):
    missing = [name for name in IMAGE_NAMES if lacks(image, name)]  # Pillow 9 answers them, deprecated
    if not missing:
        raise NotNeeded("PIL.Image still answers ANTIALIAS, LINEAR and CUBIC (Pillow < 10)")
    values = {name: image.Resampling[IMAGE_NAMES[name]] if isinstance(IMAGE_NAMES[name], str) else IMAGE_NAMES[name]
              for name in missing}
    patcher.put_back(image, values)
    return ", ".join(f"Image.{name}" for name in missing) + " back"


def _add_methods(patcher, module):
    added = []
    for class_name, methods in METHODS[module.__name__].items():
        owner = getattr(module, class_name)
        missing = {name: method for name, method in methods.items() if not hasattr(owner, name)}
        patcher.add_methods(owner, missing)
        added += [f"{class_name}.{name}" for name in missing]
    if not added:
        raise NotNeeded(f"{module.__name__} still has Pillow 9's text-measuring methods (Pillow < 10)")
    return ", ".join(added) + " back, measuring as Pillow 9.5"


def apply(patcher, module):
    if module.__name__ == "PIL.Image":
        return _put_back_image_names(patcher, module)
    return _add_methods(patcher, module)


PATCH = Patch(
    "pillow_aliases",
    since="0.4.0",
    summary="Pillow 9's Image.ANTIALIAS / LINEAR / CUBIC and ImageDraw.textsize, FreeTypeFont.getsize / getoffset back, "
    "the same filters and Pillow 9.5's measurements",
    package="pillow",
    affected="10.0.1-13.0.0 (swept; 9.5.0 still has them, deprecated)",
    targets=("PIL.Image", "PIL.ImageDraw", "PIL.ImageFont"),
    apply=apply,
    errors=(r"module 'PIL\.Image' has no attribute '(" + "|".join(IMAGE_NAMES) + r")'",
            r"'ImageDraw' object has no attribute '(multiline_)?textsize'",
            r"'(FreeTypeFont|ImageFont|TransposedFont)' object has no attribute '(getsize|getsize_multiline|getoffset)'"),
    looks_for=(*(f"name PIL.Image.{name}" for name in IMAGE_NAMES),
               *(f"call *.{method}" for classes in METHODS.values() for methods in classes.values() for method in methods)),
)
