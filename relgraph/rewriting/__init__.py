"""rewriting"""
