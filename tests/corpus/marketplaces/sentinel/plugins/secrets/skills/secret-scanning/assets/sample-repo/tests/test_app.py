FAKE_KEY = "AKIAABCDEFGHIJKLMNOP"  # a fixture: excluded with --exclude tests/
