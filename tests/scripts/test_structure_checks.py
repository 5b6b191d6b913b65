#!/usr/bin/env python3
# Tests of scripts/check_structure.py and scripts/check_code_size.py on small generated source trees: a cycle and
# an include from a library not linked are reported with their file:line, a clean tree passes, the allow-list
# accepts what it names and nothing else, #if chains choose a build's includes, and the code-size limits sit
# exactly at 500 lines, 80 lines and CCN 25.
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")

CMAKE_HEAD = """cmake_minimum_required(VERSION 3.20)
project(synthetic LANGUAGES CXX)
include_directories(${CMAKE_SOURCE_DIR})
add_library(liba STATIC a/a.cpp)
add_library(libb STATIC b/b.cpp)
"""


class Tree:
    def __init__(self, files):
        self.root = tempfile.mkdtemp(prefix="structure_checks_")
        self.source = os.path.join(self.root, "src")
        for path, text in files.items():
            full = os.path.join(self.source, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(textwrap.dedent(text))

    def run(self, script, *args):
        cmd = [sys.executable, os.path.join(SCRIPTS, script), "--source", self.source] + list(args)
        if script == "check_structure.py":
            cmd += ["--build-root", os.path.join(self.root, "build"), "--config", "only="]
        run = subprocess.run(cmd, capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def allowlist(self, lines):
        path = os.path.join(self.root, "allow.txt")
        with open(path, "w") as f:
            f.write("# known\n" + "".join(line + "\n" for line in lines))
        return path

    def remove(self):
        shutil.rmtree(self.root)


def sources(a_h, b_h, a_cpp="#include \"a/a.h\"\nint a() { return 1; }\n"):
    return {"a/a.h": a_h, "b/b.h": b_h, "a/a.cpp": a_cpp, "b/b.cpp": "#include \"b/b.h\"\nint b() { return 2; }\n"}


class StructureTest(unittest.TestCase):
    def tree(self, files):
        tree = Tree(files)
        self.addCleanup(tree.remove)
        return tree

    def test_include_and_link_cycles_are_reported_with_their_edges(self):
        files = sources("#pragma once\n#include \"b/b.h\"\n", "#pragma once\n#include \"a/a.h\"\n")
        # The link cycle passes through an interface library defined at the root, which has no folder.
        files["CMakeLists.txt"] = CMAKE_HEAD + ("add_library(glue INTERFACE)\n"
                                                "target_link_libraries(glue INTERFACE libb)\n"
                                                "target_link_libraries(liba PUBLIC glue)\n"
                                                "target_link_libraries(libb PUBLIC liba)\n")
        status, out = self.tree(files).run("check_structure.py")
        self.assertEqual(status, 1, out)
        self.assertIn("VIOLATION: include cycle: a -> b -> a\n"
                      "  a -> b: a/a.h:2 includes b/b.h\n"
                      "  b -> a: b/b.h:2 includes a/a.h\n", out)
        self.assertIn("VIOLATION: link cycle: a -> b -> a\n"
                      "  a -> b: liba -> glue -> libb\n"
                      "  b -> a: libb -> liba\n", out)
        self.assertIn("structure: 2 violations, 2 of them not in the allow-list", out)

    def test_include_of_a_library_not_linked_is_reported(self):
        a_cpp = ("#include \"a/a.h\"\n#include \"b/b.h\"\n"
                 "#ifdef PB_NEVER_DEFINED\n#include \"c/c.h\"\n#endif\nint a();\n")
        files = sources("#pragma once\n", "#pragma once\n", a_cpp)
        # c.h is included only where PB_NEVER_DEFINED is defined: not an include of this build.
        files["c/c.h"] = "#pragma once\n"
        files["c/c.cpp"] = "#include \"c/c.h\"\n"
        files["CMakeLists.txt"] = CMAKE_HEAD + "add_library(libc STATIC c/c.cpp)\n"
        tree = self.tree(files)
        status, out = tree.run("check_structure.py")
        self.assertEqual(status, 1, out)
        self.assertIn("  a/a.cpp:2 includes b/b.h from target libb which liba does not link\n", out)
        self.assertNotIn("c/c.h from", out)
        self.assertIn("structure: 1 violations, 1 of them not in the allow-list", out)
        key = "a/a.cpp includes b/b.h from target libb which liba does not link"
        status, out = tree.run("check_structure.py", "--allowlist", tree.allowlist([key]))
        self.assertEqual(status, 0, out)
        self.assertIn("allowed: " + key, out)
        status, out = tree.run("check_structure.py", "--allowlist", tree.allowlist([key.replace("liba", "libz")]))
        self.assertEqual(status, 1, out)
        self.assertIn("note: allow-list entry no longer seen (remove it): " + key.replace("liba", "libz"), out)

    def test_clean_tree_passes(self):
        files = sources("#pragma once\n#include \"b/b.h\"\n", "#pragma once\n")
        files["CMakeLists.txt"] = CMAKE_HEAD + "target_link_libraries(liba PRIVATE libb)\n"
        status, out = self.tree(files).run("check_structure.py")
        self.assertEqual(status, 0, out)
        self.assertIn("structure: 0 violations", out)

    def test_bad_configuration_is_a_usage_error(self):
        tree = self.tree({"CMakeLists.txt": CMAKE_HEAD})
        run = subprocess.run([sys.executable, os.path.join(SCRIPTS, "check_structure.py"), "--source", tree.source,
                              "--build-root", tree.root, "--config", "no name"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertIn("use NAME=CMAKE ARGUMENTS", run.stderr)


class ConditionsTest(unittest.TestCase):
    """A build's includes follow its #if chains on the project's macros; other macros keep every branch."""

    def test_if_elif_else_chain(self):
        sys.path.insert(0, SCRIPTS)
        from check_structure import Includes
        tree = Tree({"x/main.cpp": """\
            #if defined(PB_A)
            #include "x/a.h"
            #elif defined(PB_B) && !defined(PB_C)
            #include "x/b.h"
            #elif defined(__linux__)
            #include "x/l.h"
            #else
            #include "x/e.h"
            #endif
            #include "x/always.h"
            """, "x/a.h": "", "x/b.h": "", "x/l.h": "", "x/e.h": "", "x/always.h": ""})
        self.addCleanup(tree.remove)
        includes = Includes(tree.source, ["x/main.cpp", "x/a.h", "x/b.h", "x/l.h", "x/e.h", "x/always.h"], [])

        def chosen(*macros):
            return [h for _, h in includes.of("x/main.cpp", frozenset((m, "1") for m in macros))]

        self.assertEqual(chosen("PB_A", "PB_B"), ["x/a.h", "x/always.h"])
        self.assertEqual(chosen("PB_B"), ["x/b.h", "x/always.h"])
        self.assertEqual(chosen("PB_B", "PB_C"), ["x/l.h", "x/e.h", "x/always.h"])  # __linux__ undecided
        self.assertEqual([h for _, h in includes.of("x/main.cpp")],
                         ["x/a.h", "x/b.h", "x/l.h", "x/e.h", "x/always.h"])  # no build: every include line


def function(name, branches, lines):
    """A C++ function of cyclomatic complexity 1 + branches spanning `lines` lines."""
    body = ["  if (x == %d) return %d;" % (i, i) for i in range(branches)]
    body += ["  x += 1;"] * (lines - 2 - len(body))
    return "int %s(int x) {\n%s\n}\n" % (name, "\n".join(body))


class CodeSizeTest(unittest.TestCase):
    def check(self, files):
        tree = Tree(files)
        self.addCleanup(tree.remove)
        return tree.run("check_code_size.py")

    def test_limits_are_inclusive(self):
        at_limit = function("f", 24, 80)  # CCN 25, 80 lines
        status, out = self.check({"lib/ok.cpp": at_limit + "\n" * (500 - at_limit.count("\n"))})
        self.assertEqual(status, 0, out)
        self.assertIn("code size: 0 violations", out)

    def test_each_limit_is_reported_and_tests_are_exempt(self):
        big = function("complex", 25, 30) + function("longer", 0, 81)
        status, out = self.check({"lib/big.cpp": big + "\n" * (501 - big.count("\n")),
                                  "tests/big_test.cpp": function("t", 40, 600)})
        self.assertEqual(status, 1, out)
        self.assertIn("  lib/big.cpp: 501 lines (limit 500)", out)
        self.assertIn("  lib/big.cpp:1 complex CCN=26 length=30", out)
        self.assertIn("  lib/big.cpp:31 longer CCN=1 length=81", out)
        self.assertNotIn("tests/", out)
        self.assertIn("code size: 3 violations, 3 of them not in the allow-list", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
