"""Makes the fork server import run_suite.py as __mp_main__, once for the whole run.

run_suite.py asks the fork server to preload this module. Preloading "__main__" itself does
nothing on CPython 3.11: the fork server looks for a "main_path" that the preparation data
never holds (it holds "init_main_from_path"), so every rank would import torch and the suite
afresh, several seconds each. Here the file is run as the ranks' own preparation would run it,
under the same path, so that a rank forked from the server finds its __main__ in place.
"""

import os
from multiprocessing import spawn

spawn.import_main_path(os.environ["TORCHSUITE_MAIN_PATH"])
