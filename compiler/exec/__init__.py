"""Command-line entry points (TVM's ``tvm.exec``): ``python -m compiler.exec.rpc_tracker``,
``python -m compiler.exec.rpc_server`` and ``python -m compiler.exec.query_rpc_tracker``."""
