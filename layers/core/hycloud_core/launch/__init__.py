"""Starting queued jobs: dispatch passes over the FOP queue's records and the background coded jobs.

Above the records (store/queue_records.py) and the scheduling maths (control/), which never
import it (docs/ARCHITECTURE.md).
"""
