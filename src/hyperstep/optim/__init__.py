"""hyperstep.optim"""
