#!/usr/bin/env python3
# Tests of scripts/sdpa_compare.py without PyTorch or a GPU: bad arguments and inputs exit 2 naming the bad value
# before anything else, a machine without PyTorch exits 3 saying so, and bench_kernels' CSV rows are read at the
# right shapes and units (named shapes, labels carrying the dims, --label; devices cuda and cuda:N), skipping other
# dtypes, devices, ops and rows with errors.
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "sdpa_compare.py")
spec = importlib.util.spec_from_file_location("sdpa_compare", SCRIPT)
sdpa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sdpa)

HEADER = "name,iterations,real_time,cpu_time,time_unit,batch,flops_per_s,bytes_per_s,pct_cublas,pct_cublaslt," \
         "pct_roofline,error_occurred,error_message\n"
ROWS = [
    "flash_attention_forward/cuda:0/bf16/gpt2-124M,10,250.5,250.5,us,4,1,1,,,,0,",
    "flash_attention_backward/cuda/bf16/B2_T4096_NH16_HS128,10,1.5,1.5,ms,4,1,1,,,,0,",
    "flash_attention_forward/cuda:1/bf16/B2-T4096-C2048-NH16,10,900,900,us,4,1,1,,,,0,",
    "flash_attention_forward/cuda/bf16/mine,10,7,7,us,4,1,1,,,,0,",
    "flash_attention_forward/cuda:0/f32/gpt2-124M,10,999,999,us,4,1,1,,,,0,",
    "flash_attention_forward/simt:0/bf16/small,10,999,999,us,4,1,1,,,,0,",
    "layernorm_forward/cuda/bf16/gpt2-124M,10,999,999,us,4,1,1,,,,0,",
    "flash_attention_backward/cuda/bf16/gpt2-124M,10,0,0,us,4,1,1,,,,1,wrong result",
]
OPS = ["flash_attention_forward", "flash_attention_backward"]


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    f.write(text)
    f.close()
    return f.name


def torch_present():
    return importlib.util.find_spec("torch") is not None


class SdpaCompare(unittest.TestCase):
    def setUp(self):
        self.csv = write(HEADER + "\n".join(ROWS) + "\n")

    def tearDown(self):
        os.unlink(self.csv)

    def run_script(self, *args):
        r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def test_reads_rows_at_their_shapes_and_units(self):
        ours = sdpa.read_ours([self.csv], OPS, {"mine": (1, 2, 3, 4)})
        self.assertEqual(ours, {("flash_attention_forward", (8, 1024, 12, 64)): 250.5,
                                ("flash_attention_backward", (2, 4096, 16, 128)): 1500.0,
                                ("flash_attention_forward", (2, 4096, 16, 128)): 900.0,
                                ("flash_attention_forward", (1, 2, 3, 4)): 7.0})

    def test_unknown_label_is_skipped_not_guessed(self):
        ours = sdpa.read_ours([self.csv], OPS, {})
        self.assertNotIn(("flash_attention_forward", (1, 2, 3, 4)), ours)
        self.assertEqual(len(ours), 3)

    def test_bad_arguments_exit_2_naming_the_value(self):
        cases = [((), "--csv FILE"),
                 (("--csv", "/no/such.csv"), "/no/such.csv"),
                 (("--csv", self.csv, "--label", "mine=1,2,3"), "1,2,3"),
                 (("--csv", self.csv, "--label", "mine"), "'mine'"),
                 (("--csv", self.csv, "--extra-shape", "2,0,16,128"), "2,0,16,128"),
                 (("--csv", self.csv, "--iters", "0"), "--iters 0"),
                 (("--csv", self.csv, "--ops", "Bad Op"), "Bad Op"),
                 (("--csv", self.csv, "--bench-kernels", "/bin/true"), "one of them"),
                 (("--bench-kernels", "/no/bench_kernels"), "/no/bench_kernels")]
        for args, named in cases:
            rc, out = self.run_script(*args)
            self.assertEqual(rc, 2, f"{args}: {out}")
            self.assertIn(named, out, f"{args}")

    def test_csv_without_bench_kernels_columns_is_refused(self):
        other = write("a,b\n1,2\n")
        try:
            rc, out = self.run_script("--csv", other)
        finally:
            os.unlink(other)
        self.assertEqual(rc, 2, out)
        self.assertIn("lacks the name, real_time and time_unit columns", out)

    @unittest.skipIf(torch_present(), "PyTorch is installed here")
    def test_without_torch_exits_3_saying_so(self):
        rc, out = self.run_script("--csv", self.csv)
        self.assertEqual(rc, 3, out)
        self.assertIn("PyTorch is not installed", out)


if __name__ == "__main__":
    unittest.main()
