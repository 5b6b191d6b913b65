#!/usr/bin/env python3
# Dependency checks of the source tree: no cycle between top-level folders, neither in #include lines nor in the
# libraries CMake links (in any of the build configurations given), and no include of a library's header by a
# target that does not link that library, and inside a layered folder (LAYERS) no include or link from a layer to a
# later one. Standard library only; CMake's file API gives every target's sources,
# its --graphviz output the link edges (the file API lists no link dependencies of static libraries).
import argparse
import collections
import json
import os
import re
import shlex
import subprocess
import sys

SOURCE_EXTENSIONS = (".h", ".hpp", ".hh", ".cuh", ".inc", ".inl", ".ipp", ".cpp", ".cc", ".cxx", ".cu")
LIBRARY_TYPES = ("STATIC_LIBRARY", "SHARED_LIBRARY", "OBJECT_LIBRARY", "INTERFACE_LIBRARY", "MODULE_LIBRARY")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DIRECTIVE = re.compile(r"^\s*#\s*(include|ifdef|ifndef|if|elif|else|endif)\b(.*)")
DECIDED_MACRO = re.compile(r"^(PB_|PARBENCH_|__CUDACC__$)")
GRAPHVIZ_NODE = re.compile(r'^\s*"(node\d+)"\s*\[\s*label\s*=\s*"([^"]*)"')
GRAPHVIZ_EDGE = re.compile(r'^\s*"(node\d+)"\s*->\s*"(node\d+)"')
# Folders whose subfolders are layers, lowest first; "" is the folder's own files (its top). A file or library may
# use its own layer and earlier levels only; the layers of one level (a tuple) do not use each other.
LAYERS = {"collectives": ["table", "launch", "transport", "communicator", ("algorithms", "device_side"), ""]}


def top_folder(rel):
    return rel.split("/", 1)[0] if "/" in rel else None


def project_files(source):
    """Paths (relative to source) of the tree's C++/CUDA files: git's view when it is a repository (tracked and
    untracked files, not ignored ones such as build folders), else a walk that skips build and hidden folders."""
    try:
        out = subprocess.run(["git", "-C", source, "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        if subprocess.run(["git", "-C", source, "rev-parse", "--show-prefix"], capture_output=True, text=True,
                          check=True).stdout.strip() == "":
            return sorted(f for f in out if f.endswith(SOURCE_EXTENSIONS) and os.path.isfile(os.path.join(source, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for root, dirs, names in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))
                   and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))]
        files += [os.path.relpath(os.path.join(root, n), source) for n in names if n.endswith(SOURCE_EXTENSIONS)]
    return sorted(files)


class Includes:
    """The quoted #include lines of the tree's files, resolved to files of the tree where they name one; with a
    build's macros, only the lines its #if/#ifdef/#elif/#else choose (conditions on macros of the project's names
    are decided, others keep every branch)."""

    def __init__(self, source, files, include_dirs):
        self.source = source
        self.files = set(files)
        self.include_dirs = include_dirs  # relative to source, tried after the including file's folder and the root
        self.directives = {}
        self.cache = {}

    def resolve(self, including, name):
        if os.path.isabs(name):
            rel = os.path.relpath(name, self.source)
            return rel if rel in self.files else None
        for base in [os.path.dirname(including), ""] + self.include_dirs:
            rel = os.path.normpath(os.path.join(base, name))
            if rel in self.files:
                return rel
        return None

    def read(self, rel):
        """[(line number, directive, argument)] of the conditional and quoted include directives of a file."""
        if rel not in self.directives:
            found = []
            with open(os.path.join(self.source, rel), encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = DIRECTIVE.match(line)
                    if not m:
                        continue
                    if m.group(1) == "include":
                        inc = INCLUDE_LINE.match(line)
                        target = inc and self.resolve(rel, inc.group(1))
                        if target:
                            found.append((number, "include", target))
                    else:
                        found.append((number, m.group(1), m.group(2).split("//")[0].strip()))
            self.directives[rel] = found
        return self.directives[rel]

    def of(self, rel, macros=None):
        """[(line number, included file)] of one file (rel relative to the source root): every quoted include that
        names a file of the tree, or with `macros` (a build's definitions) those its conditions keep."""
        key = (rel, macros)
        if key not in self.cache:
            found, stack = [], []  # stack: [parent active, a branch taken: True, False or None (undecided)]
            active = True
            for number, kind, arg in self.read(rel):
                if kind == "include":
                    if macros is None or active:
                        found.append((number, arg))
                    continue
                if macros is None:
                    continue
                if kind in ("if", "ifdef", "ifndef"):
                    value = condition(kind, arg, macros)
                    stack.append([active, value])
                    active = active and value is not False
                elif kind == "elif" and stack:
                    parent, taken = stack[-1]
                    value = condition("if", arg, macros) if taken is not True else False
                    active = parent and taken is not True and value is not False
                    if taken is not True:
                        stack[-1][1] = True if value is True else (None if None in (taken, value) else False)
                elif kind == "else" and stack:
                    active = stack[-1][0] and stack[-1][1] is not True
                elif kind == "endif" and stack:
                    active = stack.pop()[0]
            self.cache[key] = found
        return self.cache[key]

    def closure(self, start, macros=None):
        """Every file reached from `start` through include lines, start included."""
        seen, todo = {start}, [start]
        while todo:
            for _, inc in self.of(todo.pop(), macros):
                if inc not in seen:
                    seen.add(inc)
                    todo.append(inc)
        return seen


def condition(kind, text, macros):
    """True, False, or None (undecided) where the condition names a macro outside the project's (PB_*, PARBENCH_*,
    __CUDACC__) or is more than defined(), !, &&, ||, parentheses, numbers and comparisons."""
    values = dict(macros)
    if kind != "if":
        text = ("" if kind == "ifdef" else "!") + "defined(%s)" % text
    undecided = []

    def substitute(name, value):
        if name in values:
            return value(name)
        if not DECIDED_MACRO.match(name):
            undecided.append(name)
        return "0"

    text = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                  lambda m: substitute(m.group(1) or m.group(2), lambda _: "1"), text)
    text = re.sub(r"\b[A-Za-z_]\w*", lambda m: substitute(m.group(0), values.get), text)
    if undecided or not re.fullmatch(r"[\s\d()!&|=<>]*", text):
        return None
    text = re.sub(r"!(?!=)", " not ", text.replace("&&", " and ").replace("||", " or "))
    try:
        return bool(eval(text, {"__builtins__": {}}))  # digits and operators only, checked above
    except (SyntaxError, TypeError, ValueError):
        return None


class Configuration:
    """One configured build: its targets' sources (file API) and link edges (graphviz)."""

    def __init__(self, name, build, source):
        self.name = name
        self.targets = {}  # name -> {"type", "sources": [(abs path, macros)], "include_dirs": [abs]}
        self.links = collections.defaultdict(set)
        reply = os.path.join(build, ".cmake", "api", "v1", "reply")
        index = sorted(f for f in os.listdir(reply) if f.startswith("index-"))[-1]
        with open(os.path.join(reply, index)) as f:
            codemodel = json.load(f)["reply"]["codemodel-v2"]["jsonFile"]
        with open(os.path.join(reply, codemodel)) as f:
            model = json.load(f)
        for entry in model["configurations"][0]["targets"]:
            with open(os.path.join(reply, entry["jsonFile"])) as f:
                t = json.load(f)
            groups = [macro_set(g) for g in t.get("compileGroups", [])]
            languages = [g["language"] for g in t.get("compileGroups", [])]
            sources = []
            for s in t.get("sources", []):
                if "/Unity/" in s["path"]:
                    continue  # a unity batch: its sources are listed too
                path = s["path"] if os.path.isabs(s["path"]) else os.path.join(source, s["path"])
                group = s.get("compileGroupIndex")
                if group is None and groups:  # a source of a unity batch: the group of its language
                    language = "CUDA" if path.endswith(".cu") and "CUDA" in languages else "CXX"
                    group = languages.index(language) if language in languages else 0
                sources.append((path, groups[group] if group is not None else frozenset()))
            dirs = [i["path"] for g in t.get("compileGroups", []) for i in g.get("includes", [])]
            self.targets[t["name"]] = {"type": t["type"], "sources": sources, "include_dirs": dirs}
        nodes = {}
        with open(os.path.join(build, "deps.dot")) as f:
            for line in f:
                m = GRAPHVIZ_NODE.match(line)
                if m:
                    nodes[m.group(1)] = m.group(2)
                m = GRAPHVIZ_EDGE.match(line)
                if m and m.group(1) in nodes and m.group(2) in nodes:
                    self.links[nodes[m.group(1)]].add(nodes[m.group(2)])

    def linked(self, target):
        """Every target `target` links, directly or through others."""
        seen, todo = set(), [target]
        while todo:
            for dep in self.links.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen


def macro_set(group):
    """A compile group's macros as frozenset((name, value)), __CUDACC__ for nvcc's sources."""
    macros = {(d["define"].partition("=")[0], d["define"].partition("=")[2] or "1") for d in group.get("defines", [])}
    if group.get("language") == "CUDA":
        macros.add(("__CUDACC__", "1"))
    return frozenset(macros)


def configure(source, builds):
    """Configures each (build folder, cmake arguments) at once (configure steps wait mostly on one core each) with
    the file API's codemodel query and a --graphviz file per folder, without per-target graph files."""
    runs = []
    for build, cmake_args in builds:
        query = os.path.join(build, ".cmake", "api", "v1", "query")
        os.makedirs(query, exist_ok=True)
        open(os.path.join(query, "codemodel-v2"), "w").close()
        with open(os.path.join(build, "CMakeGraphVizOptions.cmake"), "w") as f:
            f.write("set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)\nset(GRAPHVIZ_GENERATE_DEPENDERS FALSE)\n")
        cmd = ["cmake", "-S", source, "-B", build, "--graphviz=" + os.path.join(build, "deps.dot")] + cmake_args
        runs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    failed = False
    for cmd, run in runs:
        out = run.communicate()[0]
        if run.returncode != 0:
            print("check_structure: configure failed: %s\n%s" % (" ".join(cmd), out), file=sys.stderr)
            failed = True
    if failed:
        sys.exit(2)


class Project:
    """One configuration's targets mapped onto the tree: their files, folders and the libraries owning headers."""

    def __init__(self, config, includes):
        self.config = config
        self.includes = includes
        self.files = {}  # target -> {tree file it compiles: its macros} (generated wrappers: the files they include)
        for name, t in config.targets.items():
            found = {}
            for path, macros in t["sources"]:
                rel = os.path.relpath(path, includes.source)
                if rel in includes.files:
                    found[rel] = macros
                elif os.path.isfile(path):
                    found.update((f, macros) for f in self.generated_includes(path))
            self.files[name] = found
        self.folder = {}
        for name, files in self.files.items():
            folders = collections.Counter(top_folder(f) for f in files if top_folder(f))
            if folders:
                self.folder[name] = folders.most_common(1)[0][0]
        self.libraries = [n for n, t in config.targets.items() if t["type"] in LIBRARY_TYPES and self.files[n]]
        self.linked = {n: config.linked(n) for n in config.targets}
        users = collections.defaultdict(set)
        for name, deps in config.links.items():
            for dep in deps:
                users[dep].add(self.folder.get(name))
        self.fixtures = {n for n in self.libraries if users[n] <= {"tests"}}
        self.owner_cache = {}

    def generated_includes(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            names = [m.group(1) for m in map(INCLUDE_LINE.match, f) if m]
        return {r for r in (self.includes.resolve("", n) for n in names) if r}

    def reaches(self, target, header):
        return any(header in self.includes.closure(f, m) for f, m in self.files[target].items())

    def owners(self, header):
        """The libraries a header belongs to: those compiling it or a source of its name beside it; else (a header
        without a source) the libraries compiling files in its folder (or the nearest folder above) that include
        it; of those, the ones that link none of the others. A library only tests link, or none (a fixture), owns
        no header without a source. Empty for a header of executables only."""
        if header in self.owner_cache:
            return self.owner_cache[header]
        stem = os.path.splitext(header)[0]
        owners = {n for n in self.libraries
                  if header in self.files[n] or any(os.path.splitext(f)[0] == stem for f in self.files[n])}
        folder = os.path.dirname(header)
        while not owners and folder:
            near = [n for n in self.libraries if n not in self.fixtures
                    and any(os.path.dirname(f) == folder for f in self.files[n])]
            users = {n for n in near if self.reaches(n, header)}
            owners = users or set(near)
            folder = os.path.dirname(folder)
        owners = {n for n in owners if not self.linked[n] & (owners - {n})}
        self.owner_cache[header] = owners
        return owners

    def unlinked_includes(self):
        """{(file, line, header, owners, target)} for each include of a library's header by a target that neither
        is nor links (directly or through others) one of the header's libraries; the headers such an include
        brings in are not searched further (their own includes follow from the first)."""
        found = set()
        for target, files in self.files.items():
            linked = self.linked[target] | {target}
            for start, macros in files.items():
                seen, todo = {start}, [start]
                while todo:
                    f = todo.pop()
                    for line, header in self.includes.of(f, macros):
                        owners = self.owners(header)
                        if owners and not owners & linked:
                            found.add((f, line, header, tuple(sorted(owners)), target))
                        elif header not in seen:
                            seen.add(header)
                            todo.append(header)
        return found

    def link_edges(self):
        """{(folder, folder): "target -> ... -> target"}: a folder's target links one of another folder, directly
        or through targets of no folder (interface and imported libraries)."""
        edges = {}
        for target, folder in self.folder.items():
            seen, todo = set(), [(target, [target])]
            while todo:
                node, chain = todo.pop()
                for dep in sorted(self.config.links.get(node, ())):
                    if dep in seen:
                        continue
                    seen.add(dep)
                    if dep not in self.folder:
                        todo.append((dep, chain + [dep]))
                    elif self.folder[dep] != folder:
                        edges.setdefault((folder, self.folder[dep]), " -> ".join(chain + [dep]))
        return edges


def include_edges(includes):
    """{(folder, folder): "file:line includes header"} over every file of the tree."""
    edges = {}
    for f in sorted(includes.files):
        for line, header in includes.of(f):
            a, b = top_folder(f), top_folder(header)
            if a and b and a != b:
                edges.setdefault((a, b), "%s:%d includes %s" % (f, line, header))
    return edges


def layer_of(rel):
    """(layered folder, layer, level) of a tree path inside a folder of LAYERS, else None; level -1 for a
    subfolder that is no layer."""
    folder = top_folder(rel)
    if folder not in LAYERS:
        return None
    rest = rel.split("/")[1:]
    layer = rest[0] if len(rest) > 1 else ""
    for level, names in enumerate(LAYERS[folder]):
        if layer in (names if isinstance(names, tuple) else (names,)):
            return folder, layer, level
    return folder, layer, -1


def layer_name(folder, layer):
    return "%s/%s" % (folder, layer) if layer else "%s (top)" % folder


def layer_uses(a, b):
    """Why layer a may not use layer b ("" when it may): b is later, or a sibling of a's level."""
    if a[0] != b[0] or a[1] == b[1]:
        return ""
    if b[2] > a[2]:
        return "a later layer"
    return "a layer of the same level" if b[2] == a[2] else ""


def layer_violations(includes, projects):
    """Includes and links from a layer to a later layer or a sibling, and subfolders of a layered folder that are
    no layer, as violations()'s (key, lines)."""
    found = collections.OrderedDict()
    for f in sorted(includes.files):
        mine = layer_of(f)
        if mine and mine[2] < 0:
            found.setdefault("%s is not a layer of %s" % (os.path.dirname(f), mine[0]),
                             ["  %s: add it to LAYERS in scripts/check_structure.py or move it" % f])
            continue
        for line, header in includes.of(f):
            theirs = layer_of(header)
            why = theirs and mine and layer_uses(mine, theirs)
            if why:
                key = "layer: %s includes %s, %s" % (layer_name(*mine[:2]), layer_name(*theirs[:2]), why)
                found.setdefault(key, []).append("  %s:%d includes %s" % (f, line, header))
    for project in projects:
        layers = {}
        for target, files in project.files.items():
            counts = collections.Counter(layer_of(f) for f in files if layer_of(f))
            if counts:
                layers[target] = counts.most_common(1)[0][0]
        for target, mine in sorted(layers.items()):
            for dep in sorted(project.config.links.get(target, ())):
                theirs = layers.get(dep)
                why = theirs and layer_uses(mine, theirs)
                if why:
                    key = "layer: %s links %s, %s" % (layer_name(*mine[:2]), layer_name(*theirs[:2]), why)
                    text = "  %s links %s (configuration %s)" % (target, dep, project.config.name)
                    if text not in found.setdefault(key, []):
                        found[key].append(text)
    return list(found.items())


def describe_layers():
    return ["layers of %s/, lowest first: %s" % (folder, " < ".join(
        " | ".join(n or "(top)" for n in (names if isinstance(names, tuple) else (names,))) for names in levels))
        for folder, levels in sorted(LAYERS.items())]


def cycles(edges):
    """The shortest cycle through each folder that is on one, each once: [[a, b, ..., a]]."""
    graph = collections.defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    found = set()
    for start in sorted(graph):
        parent, queue = {}, collections.deque([start])
        while queue:
            node = queue.popleft()
            if start in graph[node]:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                path.reverse()
                i = path.index(min(path))
                found.add(tuple(path[i:] + path[:i]))
                break
            for nxt in sorted(graph[node]):
                if nxt not in parent and nxt != start:
                    parent[nxt] = node
                    queue.append(nxt)
    return [list(c) + [c[0]] for c in sorted(found)]


def violations(source, configs):
    """[(key, lines)]: key names the violation without line numbers (what the allow-list holds), lines show it."""
    files = project_files(source)
    dirs = sorted({os.path.relpath(d, source) for c in configs for t in c.targets.values() for d in t["include_dirs"]
                   if os.path.relpath(d, source) != "." and not os.path.relpath(d, source).startswith("..")})
    includes = Includes(source, files, dirs)
    found = []
    edges = include_edges(includes)
    for cycle in cycles(edges):
        found.append(("include cycle: " + " -> ".join(cycle),
                      ["  %s -> %s: %s" % (a, b, edges[(a, b)]) for a, b in zip(cycle, cycle[1:])]))
    link_cycles = collections.OrderedDict()
    unlinked = collections.OrderedDict()
    projects = []
    for config in configs:
        project = Project(config, includes)
        projects.append(project)
        edges = project.link_edges()
        for cycle in cycles(edges):
            entry = link_cycles.setdefault(" -> ".join(cycle), [[], {}])
            entry[0].append(config.name)
            for a, b in zip(cycle, cycle[1:]):
                entry[1].setdefault((a, b), edges[(a, b)])
        for f, line, header, owners, target in sorted(project.unlinked_includes()):
            entry = unlinked.setdefault((f, header, target), [line, set(), []])
            entry[1].update(owners)
            entry[2].append(config.name)
    everywhere = [c.name for c in configs]
    for chain, (names, pairs) in link_cycles.items():
        lines = ["  %s -> %s: %s" % (a, b, pairs[(a, b)]) for a, b in pairs]
        found.append(("link cycle: " + chain, lines + ([] if names == everywhere else
                                                        ["  in configuration " + ", ".join(sorted(set(names)))])))
    for (f, header, target), (line, owners, names) in unlinked.items():
        names = sorted(set(names))
        where = "" if names == sorted(everywhere) else " (configuration %s)" % ", ".join(names)
        text = "includes %s from target %s which %s does not link" % (header, " or ".join(sorted(owners)), target)
        found.append(("%s %s" % (f, text), ["  %s:%d %s%s" % (f, line, text, where)]))
    return found + layer_violations(includes, projects)


def read_allowlist(path):
    if not path or not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def report(found, allowed, title):
    """Prints every violation, allowed ones marked; returns how many are not allowed."""
    new = 0
    for key, lines in found:
        mark = "allowed" if key in allowed else "VIOLATION"
        new += key not in allowed
        print("%s: %s" % (mark, key))
        for line in lines:
            print(line)
    print("%s: %d violations, %d of them not in the allow-list" % (title, len(found), new))
    return new


def parse_configs(specs):
    configs = []
    for spec in specs:
        name, _, args = spec.partition("=")
        if not name or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            print("check_structure: bad --config %r: use NAME=CMAKE ARGUMENTS (NAME of letters, digits, _.-)" % spec,
                  file=sys.stderr)
            sys.exit(2)
        configs.append((name, shlex.split(args)))
    return configs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", default=".", help="the source tree (default: .)")
    parser.add_argument("--build-root", required=True, help="folder for one configure folder per configuration")
    parser.add_argument("--config", action="append", required=True,
                        help="NAME=CMAKE ARGUMENTS, one per configuration (e.g. emu=-DPARBENCH_CUDA=EMULATED)")
    parser.add_argument("--allowlist", help="known violations (one key a line, as printed after 'allowed: ')")
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    wanted = [(name, os.path.join(os.path.abspath(args.build_root), name), cmake_args)
              for name, cmake_args in parse_configs(args.config)]
    configure(source, [(build, cmake_args) for _, build, cmake_args in wanted])
    configs = [Configuration(name, build, source) for name, build, _ in wanted]
    found = violations(source, configs)
    for line in describe_layers():
        print(line)
    allowed = read_allowlist(args.allowlist)
    new = report(found, allowed, "structure")
    for key in sorted(allowed - {k for k, _ in found}):
        if not key.startswith(("file ", "function ")):  # the code-size check's entries share the file
            print("note: allow-list entry no longer seen (remove it): " + key)
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
