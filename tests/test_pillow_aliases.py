"""pillow_aliases on the installed Pillow: every size it restores is measured against Pillow 9.5 itself (installed
beside the session's own, tests/conftest.py: reference_release), font by font and text by text; the resampling
aliases resize to the same pixels as their successors; the methods stand for Pillow's own and leave with uninstall;
the real errors of today's Pillow are the ones the patch declares."""

import json

import pytest

from conftest import assert_ok, clean_environment, distribution_version, reference_release, requires, run_python

pytestmark = requires("PIL")

# every measurement the restored methods make, as JSON: run on Pillow 9.5 without zeropatch and on the installed
# Pillow with the patch; sys.argv[1] is a TrueType font file. Each entry: [what, the layout Pillow's C core gives for
# the text's lines (FreeType's; a newer FreeType may place a glyph a pixel apart), the sizes measured]
MEASURE = '''
import json, sys, warnings
warnings.simplefilter("ignore")  # Pillow 9.5 warns that these are deprecated
from PIL import Image, ImageDraw, ImageFont
texts = ["A", "Hello, world", "gjpqy \\u00c4\\u00d6", " lead", "x", "", "a\\nbb gg\\nccc", "step 100\\n"]
fonts = {size: ImageFont.truetype(sys.argv[1], size) for size in (9, 13, 24)}
bitmap = getattr(ImageFont, "load_default_imagefont", ImageFont.load_default)()  # 9.5's default: a bitmap font
draw = ImageDraw.Draw(Image.new("RGB", (64, 64)))

def layout(font, text, *mode):
    return [font.font.getsize(line, *mode) for line in ["A", *text.split("\\n")]]

out = []
for size, font in fonts.items():
    for text in texts:
        for stroke in (0, 2):
            one_line = "\\n" not in text  # Pillow >= 10 cannot lay out a newline in one line (nor could it be meant)
            out.append([[size, text, stroke], layout(font, text, "L"),
                        [one_line and font.getsize(text, stroke_width=stroke), one_line and font.getoffset(text),
                         font.getsize_multiline(text, spacing=3, stroke_width=stroke),
                         draw.textsize(text, font=font, stroke_width=stroke), draw.multiline_textsize(text, font=font)]])
    for orientation in (None, Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270, Image.Transpose.FLIP_TOP_BOTTOM):
        out.append([[size, str(orientation)], layout(font, "Hello", "L"),
                    ImageFont.TransposedFont(font, orientation).getsize("Hello")])
for text in texts:
    out.append([["bitmap", text], layout(bitmap, text), [bitmap.getsize(text), draw.textsize(text, font=bitmap, spacing=7)]])
print(json.dumps(out))
'''


def test_sizes_are_pillow_9_5s_own(tmp_path):
    if (distribution_version("pillow") or (0,)) < (10, 1):
        pytest.skip("the font the comparison uses is Pillow >= 10.1's own default font (Pillow 9.5 needs no patch)")
    folder = reference_release("pillow")
    if folder is None:
        pytest.skip("needs Pillow 9.5 beside the session's own (the nox test sessions install it: noxfile REFERENCES)")
    font = tmp_path / "aileron.ttf"
    assert_ok(run_python(f"from PIL import ImageFont; open({str(font)!r}, 'wb').write(ImageFont.load_default().font_bytes)"))
    script = tmp_path / "measure.py"
    script.write_text(MEASURE)
    old = run_python(f"import runpy, sys; sys.path.insert(0, {folder!r}); sys.argv = ['m', {str(font)!r}]\n"
                     f"import PIL; assert PIL.__version__ == '9.5.0', PIL.__version__\n"
                     f"runpy.run_path({str(script)!r}, run_name='__main__')", env=clean_environment(ZEROPATCH="0"))
    assert_ok(old)
    new = run_python(f"import runpy, sys, zeropatch; sys.argv = ['m', {str(font)!r}]\n"
                     f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
                     f"assert zeropatch.status('pillow_aliases')[0].state == 'applied'",
                     env=clean_environment(ZEROPATCH="pillow_aliases"))
    assert_ok(new)
    theirs, ours = json.loads(old.stdout), json.loads(new.stdout)
    assert len(ours) == len(theirs) > 60 and [entry[0] for entry in ours] == [entry[0] for entry in theirs]
    # where both Pillows' C cores lay the text out alike, every size is 9.5's; elsewhere FreeType, not the patch, moved
    comparable = [(mine, pillow_9) for mine, pillow_9 in zip(ours, theirs) if mine[1] == pillow_9[1]]
    assert len(comparable) >= 0.8 * len(ours), f"only {len(comparable)} of {len(ours)} laid out alike"
    differ = [(mine[0], mine[2], pillow_9[2]) for mine, pillow_9 in comparable if mine[2] != pillow_9[2]]
    assert not differ, differ[:5]


def test_aliases_resize_alike_and_methods_stand_for_pillows_own():
    assert_ok(run_python('''
import pickle, zeropatch
from PIL import Image, ImageDraw, ImageFont
from zeropatch import _core
methods = {(ImageDraw.ImageDraw, "textsize"), (ImageDraw.ImageDraw, "multiline_textsize"),
           (ImageFont.FreeTypeFont, "getsize"), (ImageFont.FreeTypeFont, "getsize_multiline"),
           (ImageFont.FreeTypeFont, "getoffset"), (ImageFont.ImageFont, "getsize"), (ImageFont.TransposedFont, "getsize")}
had = {(owner, name): vars(owner).get(name) for owner, name in methods}
errors = []
if not hasattr(ImageDraw.ImageDraw, "textsize"):  # today's Pillow: its own errors are the ones the patch declares
    for attempt in ("Image.ANTIALIAS", "ImageDraw.Draw(Image.new('L', (4, 4))).textsize('a')",
                    "ImageFont.load_default().getsize('a')"):
        try:
            eval(attempt)
        except AttributeError as error:
            errors.append(f"AttributeError: {error}")
    assert len(errors) == 3 and all(["pillow_aliases"] == [p.name for p in _core.patches_for_error(e)] for e in errors), errors
zeropatch.install("pillow_aliases")
state = zeropatch.status("pillow_aliases")[0].state
assert state == ("applied" if errors else "not-needed"), state
image = Image.linear_gradient("L").resize((37, 29), Image.Resampling.BICUBIC)
for old, new in (("ANTIALIAS", "LANCZOS"), ("LINEAR", "BILINEAR"), ("CUBIC", "BICUBIC")):
    assert getattr(Image, old) == Image.Resampling[new], old
    assert image.resize((20, 11), getattr(Image, old)).tobytes() == image.resize((20, 11), Image.Resampling[new]).tobytes()
if errors:
    for owner, name in methods:
        method = vars(owner)[name]
        assert method.__module__ == owner.__module__ and method.__qualname__ == f"{owner.__qualname__}.{name}", method
        assert pickle.loads(pickle.dumps(method)) is method, name
    zeropatch.uninstall("pillow_aliases")
    assert not any(hasattr(owner, name) for owner, name in methods) and not hasattr(Image, "ANTIALIAS")
    from zeropatch.patches.pillow import pillow_aliases
    assert pillow_aliases.textsize.__module__ == "zeropatch.patches.pillow.pillow_aliases"  # named as ours again
assert all(vars(owner).get(name) is had[(owner, name)] for owner, name in methods)  # Pillow 9's own, untouched
print("ok", state)
''', env=clean_environment(ZEROPATCH="pg_deepcopy")))  # this patch installed by the test, after today's errors
