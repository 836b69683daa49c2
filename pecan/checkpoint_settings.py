"""Old import path of what a checkpoint pins: ``pecan.scoring.settings``."""

from pecan.scoring.settings import *  # noqa: F401,F403
from pecan.scoring.settings import DEFAULT_SCORE_PROPERTY, SYNTHETIC_MARKER  # noqa: F401
