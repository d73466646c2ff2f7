"""Decisions shared by controller, relay and client: estimates, plans, priorities, queues.

Pure logic with no cloud imports; the DynamoDB and Lambda layers call into it.
"""
