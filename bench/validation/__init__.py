"""Pieces of ``bench/validate_ns3.py`` (torrentlab vs ns-3 cross-check).

- ``cases``: dumbbells, case list, torrentlab scenarios and runs;
- ``ns3_side``: the ns-3 helpers (C++ via cppyy), one ns-3 case, the worker
  subprocesses (``validate_ns3.py --ns3-batch``);
- ``report``: tables and the text of ``docs/validation-ns3.md``.
"""
