"""Reading a skill: SKILL.md (`skill_md`: frontmatter and the Agent Skills lint rules),
the eval.config contract (`contract`), SKILL.md's blocks as a reader sees them (`markdown`),
what a documented shell block does without running it (`shellparse`), which of SKILL.md's
blocks the doc test runs (`shell_blocks`), what a skill's own script accepts
(`script_interface`), bounded parsing of untrusted JSON and YAML (`safe_data`), and a starter
contract for a skill that has none (`contract_draft`, for
``aeval init``). No IO beyond reading the skill's files and writing its new contract."""
