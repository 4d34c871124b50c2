"""eqsat"""
