"""MkDocs hooks: the schedule figures, drawn from the code at build time.

``on_files`` samples each schedule family with hyperstep's own
:func:`hyperstep.schedules.sample` and draws it with matplotlib into
``figures/schedules/<word>.png``, added to the build as generated files (nothing binary is
committed; a page links ``figures/schedules/cosine.png`` as it links any file of docs/).
"""

from __future__ import annotations

import io
import os
from typing import Any

#: word -> (the expression drawn, the steps it covers); the expression is also the caption
#: and what ``hyperstep plot`` takes
FIGURES: dict[str, tuple[str, int]] = {
    "constant": ("constant(1e-3)", 1000),
    "linear": ("linear(1e-3, 1e-4, steps=800)", 1000),
    "exponential": ("exponential(1e-3, 0.5, every=200)", 1000),
    "exponential_staircase": ("exponential(1e-3, 0.5, every=200, staircase=True)", 1000),
    "inverse_time": ("inverse_time(1e-3, 1.0, every=100)", 1000),
    "polynomial": ("polynomial(1e-3, 1e-4, steps=800, power=2)", 1000),
    "cosine": ("cosine(1e-3, steps=1000)", 1000),
    "cosine_restarts": ("cosine_restarts(1e-3, steps=100, t_mul=2)", 1500),
    "piecewise": ("piecewise([300, 600, 900], [1e-3, 5e-4, 1e-4, 5e-5])", 1000),
    "cyclic": ("cyclic(1e-4, 1e-3, steps_up=100)", 1000),
    "one_cycle": ("one_cycle(1e-3, steps=1000)", 1000),
    "warmup": ("warmup(cosine(1e-3, steps=900), steps=100)", 1000),
    "join": ("join([constant(1e-3), linear(1e-3, 0, steps=400)], [600])", 1000),
    "wsd": ("wsd(1e-3, 100, 700, 200)", 1000),
    "inverse_sqrt": ("inverse_sqrt(1e-3, 100)", 1000),
    "cooldown": ("cooldown(1e-3, 600, 300, shape='1-sqrt')", 1000),
}

FOLDER = "figures/schedules"


def draw(expression: str, steps: int) -> bytes:
    """The PNG of ``expression`` over ``steps`` steps, sampled by hyperstep."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    import hyperstep as hs

    x, y = hs.schedules.sample(expression, steps=steps, num=min(steps, 1000))
    figure, axes = plt.subplots(figsize=(4.8, 2.4), dpi=100)
    axes.plot(x, y, color="#3f51b5", linewidth=1.6)
    axes.set_title(expression, fontsize=9, family="monospace")
    axes.set_xlabel("step", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
    axes.yaxis.get_offset_text().set_fontsize(7)
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for word, (expression, steps) in FIGURES.items():
        files.append(
            File.generated(config, f"{FOLDER}/{word}.png", content=draw(expression, steps))
        )
    return files


#: the line of a page that the gallery of every figure replaces
GALLERY = "<!-- schedule figures -->"


def gallery(depth: int) -> str:
    """Every figure, two to a row, each linked to its entry in the API reference."""
    import hyperstep as hs

    up = "../" * depth
    cells = []
    for word, (expression, _) in FIGURES.items():
        word_class = getattr(hs.schedules, word.removesuffix("_staircase"))
        anchor = f"{word_class.__module__}.{word_class.__qualname__}"  # mkdocstrings' id
        caption = word.replace("_staircase", ", staircase")
        cells.append(
            f"<figure markdown>\n[![{expression}]({up}{FOLDER}/{word}.png)]"
            f"({up}api/schedules.md#{anchor})\n<figcaption>{caption}</figcaption>\n</figure>"
        )
    return '<div class="grid" markdown>\n\n' + "\n\n".join(cells) + "\n\n</div>"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if GALLERY not in markdown:
        return markdown
    return markdown.replace(GALLERY, gallery(page.file.src_uri.count("/")))
