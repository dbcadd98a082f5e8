#!/usr/bin/env python3
"""jobs/submit.sh with missing or bad arguments, without Slurm or the binary
(the shell-level twin of tests/job_scripts.rs's
submit_without_or_with_bad_arguments_prints_its_usage_and_exits_2): one
usage line naming what is missing, exit status 2, never bash's own words
(`unbound variable`, `parameter null or not set`), nothing submitted and no
results folder made. A fake `sbatch` on PATH records any call and a fake
GRADCODE answers `check --ranks`. Also the batch scripts run outside a Slurm
job. Run by scripts/test-plots.sh; needs only bash.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUBMIT = ROOT / "jobs" / "submit.sh"
TRAIN = ROOT / "jobs" / "train.sbatch"
SWEEP = ROOT / "jobs" / "sweep.sbatch"


class SubmitUsageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-submit-"))
        for name, text in (
            ("sbatch", f'#!/bin/sh\necho "$*" >> {self.tmp}/calls\necho 4001\n'),
            ("gradcode", "#!/bin/sh\necho 5\n"),
        ):
            (self.tmp / name).write_text(text)
            (self.tmp / name).chmod(0o755)
        self.config = self.tmp / "k4.toml"
        self.config.write_text('workers = 4\n[scheme]\nkind = "uncoded"\n')
        self.env = dict(os.environ, PATH=f"{self.tmp}:{os.environ['PATH']}", GRADCODE=str(self.tmp / "gradcode"),
                        GRADCODE_RESULTS=str(self.tmp / "results"), GRADCODE_HOME=str(ROOT))
        for var in ("SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_ARRAY_TASK_ID", "SLURM_NTASKS"):
            self.env.pop(var, None)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_script(self, *args):
        return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=self.tmp, env=self.env,
                              timeout=60)

    def assert_refused(self, r, needle, what):
        self.assertEqual(r.returncode, 2, f"{what}: {r.stderr}")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, f"{what}: {r.stderr}")
        self.assertIn(needle, r.stderr, what)
        for bash_words in ("unbound variable", "parameter null or not set", "line "):
            self.assertNotIn(bash_words, r.stderr, what)
        self.assertFalse((self.tmp / "calls").exists(), f"{what}: sbatch was called")
        self.assertFalse((self.tmp / "results").exists(), f"{what}: a results folder was made")

    def test_missing_or_bad_arguments_print_the_usage_line_and_exit_2(self):
        for args, form, missing in (
            ([], "jobs/submit.sh jobs/train.sbatch CONFIG", "no batch script given"),
            ([self.config], "jobs/submit.sh jobs/train.sbatch CONFIG", "k4.toml is not a batch script"),
            ([TRAIN], "jobs/submit.sh jobs/train.sbatch CONFIG", "no CONFIG given"),
            ([TRAIN, "--", "--time=5"], "jobs/submit.sh jobs/train.sbatch CONFIG", "no CONFIG given"),
            ([TRAIN, "--resume"], "jobs/submit.sh jobs/train.sbatch --resume TRACE", "no TRACE given"),
            ([SWEEP], "jobs/submit.sh jobs/sweep.sbatch RUNS", "no RUNS file given"),
            ([SWEEP, "--", "--time=5"], "jobs/submit.sh jobs/sweep.sbatch RUNS", "no RUNS file given"),
        ):
            r = self.run_script(SUBMIT, *args)
            self.assert_refused(r, missing, args)
            self.assertTrue(r.stderr.startswith(f"usage: {form}"), f"{args}: {r.stderr}")
        # --help: the three forms on stdout, exit 0.
        r = self.run_script(SUBMIT, "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 3, r.stdout)
        self.assertIn("--resume TRACE", r.stdout)
        # The control: the same fakes submit a well-formed request.
        r = self.run_script(SUBMIT, TRAIN, self.config)
        self.assertEqual((r.returncode, r.stdout), (0, "4001\n"), r.stderr)
        self.assertIn("--ntasks=5", (self.tmp / "calls").read_text())

    def test_the_batch_scripts_outside_a_slurm_job_say_how_to_submit_them(self):
        for script, form in ((TRAIN, "jobs/submit.sh jobs/train.sbatch CONFIG"),
                             (SWEEP, "jobs/submit.sh jobs/sweep.sbatch RUNS")):
            r = self.run_script(script, self.config)
            self.assert_refused(r, "runs inside a Slurm job (SLURM_JOB_ID is not set)", script.name)
            self.assertTrue(r.stderr.startswith(f"usage: {form}"), r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
