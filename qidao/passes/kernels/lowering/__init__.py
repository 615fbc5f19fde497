"""The pieces of ``convert-tg-to-affine``: the host program (``host.py``), what every
kernel shares (``common.py``, ``constants.py``) and one file per op family, each
filling a kernel's loop nest."""
