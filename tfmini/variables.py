"""tf.Variable: filled by the Variables/GradientTape work (issue 3)."""

__all__ = []
