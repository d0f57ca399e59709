"""``--args-file``: the one-argument-per-line format, and real shell scripts read up to their launch line."""

from __future__ import annotations

import textwrap

import pytest
from pytest import param

from verl_mindspeed.compose._script import read_launch_file
from verl_mindspeed.errors import EvaluationError

ENV = {"HOME": "/home/me"}


def launch(tmp_path, text: str, name: str = "run.sh", env=ENV):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return read_launch_file(str(path), env)


def lines(found) -> dict[str, int]:
    return {arg: loc.line for arg, loc in zip(found.argv, found.locations)}


def test_args_format_keeps_every_line_and_its_number(tmp_path):
    found = launch(tmp_path, """
        # argv of: python3 -m verl.trainer.main_ppo
        --config-name=ppo_megatron_trainer

        data.train_files=['/data/a.parquet']
        +actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn=True
    """, name="run.args")
    assert found.kind == "args" and found.entry is None
    assert found.argv == ["--config-name=ppo_megatron_trainer", "data.train_files=['/data/a.parquet']",
                          "+actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn=True"]
    assert [loc.line for loc in found.locations] == [2, 4, 5]
    assert str(found.locations[0]) == f"{tmp_path / 'run.args'}:2"


def test_continuations_quotes_comments_and_the_module(tmp_path):
    found = launch(tmp_path, """
        #!/bin/bash
        set -xeuo pipefail
        python3 -m verl.trainer.main_ppo --config-path=config \\
            --config-name='ppo_megatron_trainer.yaml'\\
            trainer.logger='["console","wandb"]' \\
            trainer.experiment_name="run one" \\
            data.path='$NOT_EXPANDED' \\
            trainer.total_epochs=15 $@ 2>&1 | tee "log.txt"
    """)
    assert found.kind == "script" and found.entry == "verl.trainer.main_ppo"
    assert found.argv == ["--config-path=config", "--config-name=ppo_megatron_trainer.yaml",
                          'trainer.logger=["console","wandb"]', "trainer.experiment_name=run one",
                          "data.path=$NOT_EXPANDED", "trainer.total_epochs=15"]
    assert lines(found)["trainer.total_epochs=15"] == 8 and lines(found)["--config-path=config"] == 3
    assert found.issues == []


def test_variables_from_the_environment_and_earlier_assignments(tmp_path):
    found = launch(tmp_path, """
        TP=${TP:-4}
        export PP=2
        MODEL=${MODEL_PATH:-"${HOME}/models/Qwen3-8B"}
        NAME="two words"
        LEN=$((1024 * 8))
        HALF=$(( (LEN + 1024) / 2 ))
        SHORT=${MODEL##*/}
        LOWER=${SHORT,,}
        : ${SET_HERE:=7}
        if [ "$x" = "y" ]; then export INSIDE=1; fi
        python3 -m verl.trainer.main_ppo a.tp=$TP a.pp=${PP} a.model="$MODEL" a.name="$NAME" a.len=$LEN \\
            a.half=$HALF a.short=$SHORT a.lower=$LOWER a.set=$SET_HERE a.inside=$INSIDE a.env=$FROM_ENV
    """, env={**ENV, "TP": "8", "FROM_ENV": "e"})
    assert found.argv == ["a.tp=8", "a.pp=2", "a.model=/home/me/models/Qwen3-8B", "a.name=two words", "a.len=8192",
                          "a.half=4608", "a.short=Qwen3-8B", "a.lower=qwen3-8b", "a.set=7", "a.inside=1", "a.env=e"]
    assert found.issues == []


def test_an_unquoted_expansion_splits_as_bash_splits_it(tmp_path):
    found = launch(tmp_path, """
        FILES="['/a', '/b']"
        python3 -m verl.trainer.main_ppo data.files=$FILES data.quoted="$FILES"
    """)
    assert found.argv == ["data.files=['/a',", "'/b']", "data.quoted=['/a', '/b']"]


def test_arrays_keep_each_element_at_its_own_line(tmp_path):
    found = launch(tmp_path, """
        DATA=(
            # File paths
            data.train_files="${HOME}/train.parquet"
            data.max_prompt_length=$((512 * 2)) \\
            data.truncation='left'
        )
        DATA+=(data.shuffle=False)
        EMPTY=()
        python3 -m verl.trainer.main_ppo \\
            --config-name=ppo_megatron_trainer \\
            "${DATA[@]}" "${EMPTY[@]}" \\
            "$@"
    """)
    assert lines(found) == {"--config-name=ppo_megatron_trainer": 10, "data.train_files=/home/me/train.parquet": 3,
                            "data.max_prompt_length=1024": 4, "data.truncation=left": 5, "data.shuffle=False": 7}


def test_an_unset_variable_is_a_located_error_on_the_argument(tmp_path):
    found = launch(tmp_path, """
        CKPT=$CKPT_ROOT/step_100
        python3 -m verl.trainer.main_ppo \\
            actor_rollout_ref.model.path=$MODEL_PATH \\
            trainer.default_local_dir=$CKPT \\
            trainer.nnodes=${NNODES:-1}
    """)
    assert found.argv == ["actor_rollout_ref.model.path=", "trainer.default_local_dir=/step_100", "trainer.nnodes=1"]
    unset = {(i.key, i.location.line, i.rule, i.severity) for i in found.issues}
    assert unset == {("actor_rollout_ref.model.path", 3, "unset-variable", "error"),
                     ("trainer.default_local_dir", 1, "unset-variable", "error")}
    assert "$MODEL_PATH is not set" in next(str(i.message) for i in found.issues if i.location.line == 3)


def test_a_command_substitution_is_not_run_and_says_so(tmp_path):
    found = launch(tmp_path, """
        NAME="run-$(date +%Y%m%d)"
        python3 -m verl.trainer.main_ppo trainer.experiment_name="$NAME" trainer.x=`hostname`
    """)
    assert found.argv == ["trainer.experiment_name=run-", "trainer.x="]
    assert [(i.severity, i.key, i.location.line, i.rule) for i in found.issues] == [
        ("note", "trainer.experiment_name", 1, "shell-not-run"), ("note", "trainer.x", 2, "shell-not-run")]


@pytest.mark.parametrize("command, module", [
    param("torchrun --nproc_per_node=8 -m verl.trainer.main_ppo a.b=1", "verl.trainer.main_ppo", id="torchrun"),
    param("python -u -m recipe.dapo.main_dapo a.b=1", "recipe.dapo.main_dapo", id="python-u"),
    param("ray job submit --address=http://h:8265 -- python3 -m verl.trainer.main_ppo a.b=1",
          "verl.trainer.main_ppo", id="ray-job-submit"),
    param("HYDRA_FULL_ERROR=1 python3.11 -m verl.trainer.main_ppo a.b=1", "verl.trainer.main_ppo", id="env-prefix"),
    param("coverage run --source=verl -m verl.trainer.main_ppo a.b=1", "verl.trainer.main_ppo", id="coverage"),
    param("python3 verl/trainer/main_ppo.py a.b=1", "verl.trainer.main_ppo", id="script-path"),
    param("nohup python3 -m verl.trainer.main_ppo a.b=1 > out.log 2>&1 &", "verl.trainer.main_ppo", id="nohup"),
])
def test_launch_commands(tmp_path, command, module):
    found = launch(tmp_path, f"python3 prepare.py --out data\n{command}\n")
    assert (found.entry, found.argv) == (module, ["a.b=1"])


def test_here_documents_and_other_commands_are_skipped(tmp_path):
    found = launch(tmp_path, """
        cat > extra.yaml <<EOF
        python3 -m not.this x=1
        EOF
        python3 -c "print('hello')"
        python3 -m verl.trainer.main_ppo ab\\
        c=1
    """)
    assert (found.entry, found.argv) == ("verl.trainer.main_ppo", ["abc=1"])


def test_a_script_without_a_launch_line_cannot_be_evaluated(tmp_path):
    with pytest.raises(EvaluationError, match="no 'python3 -m <module> ...' launch line"):
        launch(tmp_path, "#!/bin/bash\necho hello\n")


def test_the_shipped_example_scripts_read(tmp_path):
    from helpers import FIXTURES

    for path in sorted((FIXTURES / "scripts").glob("*.sh")):
        found = read_launch_file(str(path), ENV)
        assert found.kind == "script" and found.entry.startswith("verl.") and len(found.argv) > 50, path.name
        assert all(loc.file == str(path) for loc in found.locations)
        assert not [i for i in found.issues if i.severity == "error"], path.name


def test_a_sourced_file_is_read_when_found_and_named_when_not(tmp_path):
    (tmp_path / "env.sh").write_text("MODEL_PATH=/models/Qwen3-8B\nexport NNODES=2\n")
    found = launch(tmp_path, """
        source env.sh
        python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH trainer.nnodes=$NNODES
    """)
    assert found.argv == ["actor_rollout_ref.model.path=/models/Qwen3-8B", "trainer.nnodes=2"] and not found.issues
    found = launch(tmp_path, """
        . ./cluster_env.sh
        python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH
    """)
    (unset,) = found.issues
    assert "$MODEL_PATH is not set" in str(unset.message)
    assert "./cluster_env.sh (line 1)" in str(unset.hint) and "not found here" in str(unset.hint)


def test_words_split_in_linear_time_are_shlex_s_words():
    """compose._lex sets long plain runs aside so shlex stays linear: the words are shlex's own, quotes, escapes,
    operators and comments included."""
    import random
    import shlex

    from verl_mindspeed.compose._lex import lex

    rng = random.Random(7)
    pieces = ["a" * 70, "b=" + "x" * 100, " ", "  ", "'q " + "y" * 80 + "'", '"d $z ' + "w" * 65 + '"', "\\ ", "(", ")",
              "|", "&&", ";", "# c " + "k" * 66, "+k.v=" + "1" * 90, "\\\n", "=", "[1,2]"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        for commenters in ("#", ""):
            want = shlex.shlex(text, posix=True, punctuation_chars=True)
            want.whitespace_split, want.commenters = True, commenters
            try:
                expected = list(want)
            except ValueError:
                with pytest.raises(ValueError):
                    lex(text, commenters=commenters)
                continue
            assert lex(text, commenters=commenters) == expected, text
