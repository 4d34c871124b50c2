"""terms"""
