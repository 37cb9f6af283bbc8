"""Suite-wide settings: a non-interactive plotting backend, and every cache the package or its
libraries would write under the user's home redirected into one temporary folder, removed at
exit (the suite writes nowhere but its temporary folders)."""

import atexit
import os
import shutil
import tempfile

SCRATCH = tempfile.mkdtemp(prefix="shortcutlab-tests-")
atexit.register(shutil.rmtree, SCRATCH, True)

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ["SHORTCUTLAB_CACHE_DIR"] = os.path.join(SCRATCH, "cache")
os.environ["XDG_CACHE_HOME"] = os.path.join(SCRATCH, "xdg-cache")
os.environ["MPLCONFIGDIR"] = os.path.join(SCRATCH, "matplotlib")
