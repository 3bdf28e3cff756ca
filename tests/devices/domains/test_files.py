"""Files domain: asynchronous downloads (and slow faults), the file manager, and showcase 3's two GUI agents."""

from __future__ import annotations

from devices.virtual.domains.files import SITE, downloaded_before_filed
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from devices.virtual.tasks import Task
from harness.episode import run_episode
from harness.reference import ReferenceSolver
from harness.subagents import ScriptedGuiExecutor

SHOWCASE = "files.gui_download_then_file"


def _phone(task: Task | None = None, **setup) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    for key, value in setup.items():
        set_path(phone.state, key.replace("__", "."), value)
    return phone


def _status(phone: VirtualPhone, name: str) -> str:
    rows = phone.call(("list_downloads", {})).data["downloads"]
    return next(r["status"] for r in rows if r["name"] == name)


def test_downloads_complete_over_steps_and_land_in_download():
    phone = _phone()
    assert phone.call(("download_file", {"url": SITE + "budget_2027.xlsx"})).data["status"] == "downloading"
    assert phone.call(("download_file", {"url": SITE + "budget_2027.xlsx"})).code == 409
    phone.advance(1)
    assert _status(phone, "budget_2027.xlsx") == "downloading"
    phone.advance(1)
    assert _status(phone, "budget_2027.xlsx") == "completed"
    assert phone.state["files"]["items"]["file_budget_2027_xlsx"]["folder"] == "Download"
    assert phone.call(("download_file", {"url": SITE + "budget_2027.xlsx"})).code == 409  # already downloaded


def test_a_slow_fault_delays_completion():
    task = catalog().templates["files.download_poll_and_file"].instantiate(0)
    task.faults = [{"tool": "download_file", "kind": "slow", "times": 1, "delay": 3}]
    task.setup = {k: v for k, v in task.setup.items() if not k.startswith("connectivity")}
    phone = _phone(task)
    name = task.params["name"]
    phone.call(("download_file", {"url": SITE + name}))
    total = phone.state["files"]["downloads"][f"dl_{name.replace('.', '_')}"]["total_steps"]
    assert total >= 5
    phone.advance(total - 1)
    assert _status(phone, name) == "downloading"
    phone.advance(1)
    assert _status(phone, name) == "completed"


def test_downloads_need_a_connection():
    phone = _phone(connectivity__wifi__enabled=False)
    assert phone.call(("download_file", {"url": SITE + "q3_summary.pdf"})).code == 412
    assert phone.call(("list_page_downloads", {})).code == 412


def test_file_manager_conflicts_and_trash():
    phone = _phone()
    assert phone.call(("copy_file", {"path": "Documents/cv_2026.docx", "destination": "Download"})).success
    assert phone.call(("get_file_info", {"path": "cv_2026.docx"})).code == 409  # ambiguous without a folder
    moved = phone.call(("move_files", {"paths": ["Download/cv_2026.docx"], "destination": "Documents"}))
    assert moved.code == 409
    assert phone.call(("delete_files", {"paths": ["Download/cv_2026.docx"]})).success
    assert phone.call(("restore_file", {"name": "cv_2026.docx"})).success
    r = phone.call(("move_files", {"paths": ["Download/setup_guide.pdf"], "destination": "Manuals"}))
    assert r.code == 404
    r = phone.call(
        ("move_files", {"paths": ["Download/setup_guide.pdf"], "destination": "Manuals", "create_folder": True})
    )
    assert r.success and "Manuals" in phone.state["files"]["folders"]


def test_gui_scripts_parse_the_instruction_wording():
    browser = catalog().apps["Browser"].script
    acts = browser("Download the files: a.pdf, b.xlsx, c.docx")
    assert [a for a in acts if a[0] == "confirm"] == [
        ("confirm", "a.pdf · Complete", "a.pdf"),
        ("confirm", "b.xlsx · Complete", "b.xlsx"),
        ("confirm", "c.docx · Complete", "c.docx"),
    ]
    files = catalog().apps["Files"].script
    for text, dest in [
        ("Move a.pdf, b.xlsx, c.docx into the folder Reports", "Reports"),
        ("Move a.pdf and b.xlsx from Downloads to my Q3 Review folder.", "Q3 Review"),
        ("Put a.pdf in the folder called 'Board Pack'", "Board Pack"),
    ]:
        acts = files(text)
        assert acts is not None and ("type", dest, "dest") in acts, text
        assert acts[0] == ("tap", "Download")
    assert files("Move everything somewhere") is None


def test_browser_agent_confirms_only_completed_downloads():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Browser", "Download the files: q3_summary.pdf, press_release.docx", 30)
    assert run.status == "completed", run.error
    assert run.artifacts == ["q3_summary.pdf", "press_release.docx"]
    assert [s["action"] for s in run.steps].count("verify_result") == 2
    # Without enough waiting the confirmation must fail: strip the wait from the script.
    phone = _phone()
    phone.open_app("Browser")
    acts = [a for a in catalog().apps["Browser"].script("Download the files: q3_summary.pdf") if a[0] != "wait"]
    for a in acts[:-1]:
        assert phone.tap(a[1]).success
    assert not any("q3_summary.pdf · Complete" in e.text for e in phone.screen().elements)


def test_files_agent_selects_moves_and_confirms():
    phone = _phone()
    run = ScriptedGuiExecutor().run(
        phone, "Files", "Move boarding_pass.pdf, receipt_0931.pdf from Download into the folder Travel", 30
    )
    assert run.status == "completed", run.error
    assert run.artifacts == ["boarding_pass.pdf", "receipt_0931.pdf"]
    items = phone.state["files"]["items"]
    assert items["file_boarding_pass_pdf"]["folder"] == items["file_receipt_0931_pdf"]["folder"] == "Travel"
    assert items["file_setup_guide_pdf"]["folder"] == "Download"


def test_showcase_hands_the_confirmed_names_to_the_second_agent():
    tpl = catalog().templates[SHOWCASE]
    for seed in range(20):
        task = tpl.instantiate(seed)
        ep = run_episode(task, ReferenceSolver())
        assert ep.verdict.success, ep.verdict.reason
        gui = [c for s in ep.steps for c in s.calls if c.call.name == "control_gui_agent"]
        assert [c.call.arguments["action"] for c in gui] == ["start", "execute", "start", "execute"]
        assert gui[0].call.arguments["appName"] == "Browser" and gui[2].call.arguments["appName"] == "Files"
        assert gui[1].result.data["artifacts"] == task.params["names"]
        for name in gui[1].result.data["artifacts"]:
            assert name in gui[2].call.arguments["instruction"]
        assert gui[3].result.data["execution_status"] == "completed"


def test_showcase_filing_before_the_downloads_finish_fails():
    task = catalog().templates[SHOWCASE].instantiate(1)
    names, dest = task.params["names"], task.params["dest"]
    phone = _phone(task)
    for n in names:
        phone.call(("download_file", {"url": SITE + n}))
    # The Files agent runs before the downloads land: nothing to select, so it fails.
    run = ScriptedGuiExecutor().run(phone, "Files", f"Move {', '.join(names)} into the folder {dest}", 30)
    assert run.status == "failed"
    # A log where a move precedes completion is rejected by the template's ordering check.
    events = [
        {"seq": 1, "event": "files.files_moved", "names": names},
        *({"seq": 2 + i, "event": "files.download_complete", "name": n} for i, n in enumerate(names)),
    ]
    ok, why = downloaded_before_filed(task, {}, {"_meta": {"events": events}}, "")
    assert not ok and "before it was moved" in why
