#!/usr/bin/env python3
"""Records mlx-c's public C prototypes, one file per release, as test data.

Run from an mlx-c git checkout (ml-explore/mlx-c):

    python3 mlx/testdata/prototypes.py /path/to/mlx-c  v0.4.1 v0.5.0 v0.6.0 fba4470

It writes mlx/testdata/mlxc-<ref>.txt: one normalized prototype per line
("int mlx_add(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)"),
sorted by name. TestSymbolTableMatchesHeaders checks the binding's table
against these files: every declared prototype equals the header's, and every
symbol marked optional is absent from exactly the releases before its Since.
"""
import os
import re
import subprocess
import sys


def headers(repo, ref):
    names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", ref, "mlx/c/"],
                           check=True, capture_output=True, text=True).stdout.split()
    for n in sorted(names):
        if n.endswith(".h"):
            yield subprocess.run(["git", "-C", repo, "show", f"{ref}:{n}"],
                                 check=True, capture_output=True, text=True).stdout


def normalize(p):
    p = re.sub(r"\s+", " ", p).strip()
    p = re.sub(r"\(\s+", "(", p)
    p = re.sub(r"\s+\)", ")", p)
    p = re.sub(r"\s+,", ",", p)
    return p


def prototypes(repo, ref):
    text = "\n".join(headers(repo, ref))
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"#[^\n]*", "", text)
    out = {}
    for m in re.finditer(r"(?:^|[;}\n])\s*((?:const\s+)?[A-Za-z_][A-Za-z0-9_ ]*[\s*]+(_?mlx_[a-z0-9_]+)\s*\(((?:[^;{()]|\([^()]*\))*)\))\s*;", text):
        out[m.group(2)] = normalize(m.group(1))
    return out


def main():
    repo, refs = sys.argv[1], sys.argv[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    for ref in refs:
        protos = prototypes(repo, ref)
        with open(os.path.join(here, f"mlxc-{ref}.txt"), "w") as f:
            f.write(f"# mlx-c {ref}: {len(protos)} prototypes (mlx/testdata/prototypes.py)\n")
            for name in sorted(protos):
                f.write(protos[name] + "\n")
        print(ref, len(protos))


if __name__ == "__main__":
    main()
