"""Numbers, pure: grader agreement (`agreement`), uplift statistics (`uplift`), trigger
accuracy (`triggers`)."""
