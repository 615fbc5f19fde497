"""The compile cache: a model compiled once is loaded, not compiled, the next time.

    qidao.compile("resnet50.onnx")    # cold: every stage, then the entry is stored
    qidao.compile("resnet50.onnx")    # warm, in any process: machine code loaded
    compiled.stats["cache"]           # "hit", "miss, stored", "rebuilt: <why>, ..."
                                      # or "off: <why>"

An entry is content-addressed: its key (``key.py``) is a SHA-256 of everything the
machine code depends on: the model's content (custom ops' bodies and every
external-data range included), the target, the CPU and its features, every option,
and qidao itself (its sources and version, and the versions of xDSL, llvmlite and
its LLVM, NumPy and onnx). Where the cache lives: ``$QIDAO_CACHE_DIR``, else
``$XDG_CACHE_HOME/qidao``, else ``~/.cache/qidao``; ``QIDAO_CACHE=off`` turns it
off. ``qidao cache info`` and ``qidao cache clear`` show and empty it.

Not cached (``stats["cache"]`` says which): a ``schedule`` function (its effect
cannot be keyed), ``debug`` > 0 (it prints the stages as they run),
``verify="each"`` and ``profile=True``.

Threat model
------------
A cache entry is machine code that qidao runs, so an entry must be one that this
user's qidao compiled. The cache defends against **anyone who can write files the
cache reads but is not this user**: another user of a shared machine or shared
folder, an archive or CI cache unpacked into the folder, a cache folder copied
from another machine or user. Against them:

- **Entries are signed.** ``meta.hmac`` is the HMAC-SHA256 of ``meta.json`` under a
  32-byte key that lives outside the cache folder (``secret.py``:
  ``~/.config/qidao/cache.key``, mode 0600); ``meta.json`` holds the size and
  SHA-256 of the code and the weights. Nothing is parsed before the signature
  checks, so an entry edited, swapped for another key's, or made elsewhere is
  rebuilt, never loaded (checksums stored beside the data would prove nothing:
  anyone can recompute them).
- **The folders must be private.** The cache's root, its ``v1`` folder and the
  key's folder must be real folders (not symlinks) owned by this user that no
  other user may write; else the cache is off for the compile and
  ``stats["cache"]`` names the folder (as pip does for its cache). qidao makes
  them with mode 0700.
- **Files are read without trust** (``files.py``): opened with ``O_NOFOLLOW`` and
  ``O_NONBLOCK``, checked to be regular files owned by this user, their size
  checked before a byte is read (a symlink to ``/dev/zero``, a FIFO or a device is
  refused, never read or waited on).
- **A loaded model is fixed.** Code and weights are read into this process's
  memory and checked there, so a later write to (or truncation of) the files
  cannot change a model that is loaded.
- **``qidao cache clear`` removes only what qidao made**: entry folders named by a
  key that hold only an entry's four files. It follows no symlink, does not look
  into a folder that is not private, and names what it left.

Not defended: a process running as this user (it can read the key, or change
qidao itself), and a malicious *model*: compiling a model runs its ops, so a model
is input to be checked (``qidao.frontend``), not code to be trusted. Accidental
damage (a truncated file, a flipped bit, an entry removed by ``qidao cache
clear`` while another process reads it) fails a check, and the entry is removed
and rebuilt, never loaded (``stats["cache"]`` says why).
"""

from qidao.compiler.cache.key import (
    FORMAT,
    cache_key,
    compiler_digest,
    model_digest,
    module_digest,
    uses_custom_ops,
)
from qidao.compiler.cache.store import (
    ALIGNMENT,
    CACHE_DIR_ENV,
    CACHE_SWITCH_ENV,
    CacheError,
    Cleared,
    CompileCache,
    Entry,
    cache_dir,
    cache_enabled,
    lookup,
)

__all__ = [
    "ALIGNMENT",
    "CACHE_DIR_ENV",
    "CACHE_SWITCH_ENV",
    "FORMAT",
    "CacheError",
    "Cleared",
    "CompileCache",
    "Entry",
    "cache_dir",
    "cache_enabled",
    "cache_key",
    "compiler_digest",
    "lookup",
    "model_digest",
    "module_digest",
    "uses_custom_ops",
]
