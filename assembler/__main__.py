"""`python -m assembler` is `assemble`.

`python -m` puts the current directory first on `sys.path`; when that directory is a
project, any import could load the project's files (a `grp.py` standing in for the
standard one) before trust is decided. The `assemble` console script has no such
entry, and `python -m assembler` drops it to behave the same.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from assembler.cli.main import main

main()
