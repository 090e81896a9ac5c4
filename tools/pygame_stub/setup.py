"""An empty `pygame` 2.1.3 distribution: pygame-ce provides the module.

tf-agents 0.19 requires pygame==2.1.3 but never imports it; minigrid
requires pygame-ce, which installs the same `pygame` module (and imports
it, as gymnasium's renderers do). Both in one venv write one
site-packages/pygame/, the last installed wins and uninstalling either
breaks the other. Installed before tfa_explore (the Makefile,
tools/wheel_check.sh), this satisfies tf-agents' requirement with no
files, so pygame-ce alone owns the module.
"""

import setuptools

setuptools.setup(
    name='pygame',
    version='2.1.3',
    description=('Empty stand-in for pygame 2.1.3 (required by tf-agents, '
                 'unused); pygame-ce provides the pygame module.'),
    py_modules=[],
)
