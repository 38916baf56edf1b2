"""One case chain: `chain` (assertions -> execute -> grade, one task), the assertions written
before anything runs (`assertions`), install (`install`), one attempt (`attempt`, run by
`execute`), the documented-workflow probe (`probe`), grading (`grade`) and the separated
grader (`model_grader`), and the attempt's sandbox (`sandboxing`)."""
