import os
import sys

# tests/ on the path so that `from specs import SPECS` works.
sys.path.insert(0, os.path.dirname(__file__))
