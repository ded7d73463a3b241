"""hyperstep.cli"""
