"""hyperstep.control"""
