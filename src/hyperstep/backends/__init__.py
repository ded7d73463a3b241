"""Every per-backend path of hyperstep, and the evaluation of schedules with NumPy."""
