#!/usr/bin/env python3
"""Tests of scripts/reproduce_figures.py: every paper figure re-rendered from
the committed results/paper/*.json (`--replot`, no simulation) as PNG, PDF
and SVG; the papers' stated numbers drawn where the JSON puts them, labelled
with the citation; captions and the README carrying the full citations and
the settings of the configs; one colour per scheme, the same in every
figure. Run by scripts/test-plots.sh.
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest
import xml.etree.ElementTree as ET

import matplotlib.colors as mcolors
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import reproduce_figures as rf  # noqa: E402

PAPER = ROOT / "results/paper"
CONFIGS = ROOT / "configs/paper"
FIGURES = sorted(c.stem for c in CONFIGS.glob("*.toml") if "simulate" in tomllib.loads(c.read_text()))


def result(name):
    return json.loads((PAPER / f"{name}.json").read_text())


def markers(fig):
    """[(axes index, x, y, label)] of the white diamonds (the papers' numbers)."""
    out = []
    for i, ax in enumerate(fig.axes):
        for line in ax.get_lines():
            if line.get_marker() == "D" and line.get_markerfacecolor() == "white":
                out += [(i, x, y, line.get_label()) for x, y in zip(line.get_xdata(), line.get_ydata())]
    return out


class FiguresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cites = rf.citations()
        cls.out = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-figures-"))
        for j in PAPER.glob("*.json"):
            shutil.copy(j, cls.out)
        shutil.copy(PAPER / "NOTES.md", cls.out)
        cls.replot = subprocess.run([sys.executable, HERE / "reproduce_figures.py", "--replot", "--out", cls.out],
                                 capture_output=True, text=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out)

    def test_every_figure_is_written_as_png_pdf_and_svg(self):
        self.assertEqual(self.replot.returncode, 0, self.replot.stderr)
        self.assertEqual(sorted(p.stem for p in PAPER.glob("*.json") if p.stem in FIGURES), FIGURES)
        for name in FIGURES:
            with Image.open(self.out / f"{name}.png") as im:
                self.assertEqual(im.format, "PNG")
                self.assertGreater(len(im.convert("RGB").getcolors(1 << 20) or range(1 << 20)), 20, name)
            self.assertEqual((self.out / f"{name}.pdf").read_bytes()[:5], b"%PDF-", name)
            root = ET.parse(self.out / f"{name}.svg").getroot()
            self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg", name)
            # The caption (drawn as paths) is also the SVG's title, as the README gives it.
            title = root.find(".//{http://purl.org/dc/elements/1.1/}title")
            text = (CONFIGS / f"{name}.toml").read_text()
            self.assertEqual(title.text, rf.caption(text, tomllib.loads(text), self.cites), name)
            self.assertIn(f"*{title.text}*", (self.out / "README.md").read_text())

    def test_readme_has_the_full_citations_and_a_caption_with_the_setting_per_figure(self):
        readme = (self.out / "README.md").read_text()
        self.assertIn("## References", readme)
        papers_md = (ROOT / "docs/papers.md").read_text()
        for number, cite in self.cites.items():
            self.assertIn(f"- [{number}] {cite}", readme)
            self.assertIn(cite.split(",")[0], papers_md)
        self.assertIn("IEEE Transactions on Communications, 2022", self.cites["000"])
        for name in FIGURES:
            cfg = tomllib.loads((CONFIGS / f"{name}.toml").read_text())
            section = readme.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
            cap = re.search(r"^\*(.+)\* \(\[PDF\]", section, re.M)
            self.assertIsNotNone(cap, name)
            cap = cap.group(1)
            self.assertIn(f"K = {cfg['workers']}", cap, name)
            self.assertIn(f"straggler model {cfg['straggler']['model']}", cap, name)
            self.assertIn(f"{cfg['simulate']['trials']} trials x {cfg['simulate']['iterations']} iterations", cap)
            for key, sym in (("clusters", "P"), ("load", "r"), ("clusters_per_worker", "n")):
                if key in cfg["scheme"]:
                    self.assertIn(f"{sym} = {cfg['scheme'][key]}", cap, name)
            paper, fig = rf.figure_source((CONFIGS / f"{name}.toml").read_text())
            self.assertIn(self.cites[paper], cap, name)
            if fig:
                self.assertIn(f"Reproduction of {fig} of [{paper}]", cap)
            self.assertIn(f"]({name}.svg)", section)
        self.assertIn("Reproduction of Fig. 4(a) of [000] B. Buyukates", readme)

    def test_the_papers_numbers_are_drawn_where_they_belong(self):
        for name, over, percent in (("gcdc-fig4a", "gc-sc", 34), ("gcdc-fig4b", "gc-sc", 45),
                                    ("gcdc-fig6a", "gc-sc", 16), ("gcdc-fig6b", "gc-sc", 20)):
            r = result(name)
            fig, _ = rf.draw(CONFIGS / f"{name}.toml", r, self.cites)
            (ax, x, y, label), = markers(fig)
            means = {s["name"]: s["mean_iteration_time"] for s in r["schemes"]}
            self.assertAlmostEqual(y, means[over] * (1 - percent / 100), places=9)
            self.assertEqual(x, [s["name"] for s in r["schemes"]].index("gc-dc"))
            flat = label.replace("\n", " ")
            self.assertIn(f"≈{percent}% below GC-SC", flat)
            self.assertIn("[000] Buyukates et al., IEEE Transactions on Communications, 2022", flat)
            self.assertIn(f"Fig. {name[-2]}({name[-1]})", flat)
        r = result("mmc-fig1")
        fig, _ = rf.draw(CONFIGS / "mmc-fig1.toml", r, self.cites)
        drawn = markers(fig)
        self.assertIn("messages", rf.directives((CONFIGS / "mmc-fig1.toml").read_text())[1])
        (ax, x, y, label), = drawn
        self.assertEqual(fig.axes[ax].get_ylabel(), rf.PANEL["messages"][1])
        self.assertEqual(x, [s["name"] for s in r["schemes"]].index("gc-mmc-2"))
        self.assertEqual(y, r["workers"] * 1.0)
        self.assertIn("[003] Ozfatura et al., IEEE Data Science Workshop (DSW), 2019, Fig. 1(b)", label.replace("\n", " "))
        r = result("isgc-recovery")
        fig, _ = rf.draw(CONFIGS / "isgc-recovery.toml", r, self.cites)
        pts = {(ax, x, y) for ax, x, y, _ in markers(fig)}
        self.assertEqual(pts, {(0, 1, 50.0)})
        # What the marker says is what the run gives at w = 1 (c/n of 004's Theorems).
        w1 = r["sweep"]["values"].index(1)
        for s in r["runs"][w1]["schemes"]:
            if s["name"] != "is-sgd":
                self.assertAlmostEqual(100 * s["recovered_fraction"], 50.0, places=9)

    def test_one_colour_per_scheme_in_every_figure(self):
        seen = {}
        for name in FIGURES:
            r = result(name)
            fig, _ = rf.draw(CONFIGS / f"{name}.toml", r, self.cites)
            ax = fig.axes[0]
            names = [s["name"] for s in (r["runs"][0] if "sweep" in r else r)["schemes"]]
            if "sweep" in r:
                drawn = {line.get_label().lower(): mcolors.to_hex(line.get_color()) for line in ax.get_lines()
                         if line.get_label().lower() in names}
            else:
                drawn = {t.get_text().lower(): mcolors.to_hex(b.get_facecolor())
                         for t, b in zip(ax.get_xticklabels(), ax.patches) if t.get_text() != "LB"}
            self.assertEqual(set(drawn), set(names), name)
            self.assertEqual(len(set(drawn.values())), len(drawn), f"{name}: two schemes share a colour")
            for scheme, c in drawn.items():
                self.assertIn(c.upper(), {v.upper() for v in rf.OKABE_ITO.values()}, f"{name}: {scheme}")
                self.assertEqual(seen.setdefault(scheme, c), c, f"{scheme} changes colour in {name}")
        self.assertEqual(seen["gc-dc"].upper(), rf.OKABE_ITO["bluish green"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
