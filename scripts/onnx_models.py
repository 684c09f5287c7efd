"""Write the seeded random-weight ONNX models of ``relay.testing.onnx_models`` to files.

    python3 scripts/onnx_models.py --out models/      # writes <name>.onnx for every model
    python3 scripts/onnx_models.py resnet18 mlp       # only these

The models (resnet18, resnet50, mobilenet_v2, bert_layer, mlp) are built with
``onnx.helper`` from a seed, no downloads; the same seed gives the same bytes.
"""
from __future__ import annotations

import argparse
import pathlib

import onnx

from compiler.relay.testing.onnx_models import MODELS


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="models")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("names", nargs="*", default=sorted(MODELS), choices=sorted(MODELS))
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        model, _ = MODELS[name](seed=args.seed)
        onnx.save(model, out / f"{name}.onnx")
        print(f"wrote {out / name}.onnx")


if __name__ == "__main__":
    main()
