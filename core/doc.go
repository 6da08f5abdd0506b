// Package core runs a test: one executor per scenario, the VUs, the
// weighted picker, checks, thresholds and the run's lifecycle. It decides
// when each request is evaluated (per iteration, with the VU's variables,
// data row and captures) and calls the evaluator config compiled for it
// at load (config.Request's Eval and EvalHoles); it hands protocols plain
// values. How an expression is evaluated stays in config, beside the code
// that checks it, so that validate and apply judge a test with one
// evaluator.
package core
