"""SDF records as text (``pecan.scoring.sdf_text``) and the groups read from them (``pecan.scoring.inputs``):
the same records, molecules, titles and groups as RDKit's reading of the file, odd files included; each rank
parses only its own groups; a written record reads back as its input with the scores added."""

import io
from pathlib import Path

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem, RDLogger

from pecan.scoring import inputs, sdf_text
from pecan.scoring.inputs import PosesFile, iter_groups
from pecan.scoring.sdf_text import RecordParser, property_value, record_title, split_records, with_properties

RDLogger.DisableLog("rdApp.*")

BROKEN = b"ligX\n  broken\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\nnonsense\nM  END\n$$$$\n"


def record(smiles: str, title: str, **props) -> bytes:
    """One SDF record as RDKit writes it, with ``props``."""
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    mol.SetProp("_Name", title)
    for name, value in props.items():
        mol.SetProp(name, str(value))
    buffer = io.StringIO()
    with Chem.SDWriter(buffer) as writer:
        writer.write(mol)
    return buffer.getvalue().encode()


def odd_file() -> bytes:
    """Titles that look like numbers or missing values, leading and trailing spaces, duplicates, runs and a
    title met again later, an empty title, and a record RDKit cannot parse (titled ``ligX``)."""
    titles = ["1", "1", "NA", "  lead", "  lead", "trail  ", "dup", "dup", "", "NA", "1", "1"]
    data = [record("CCO" if k % 2 else "c1ccccc1O", title, score=-k / 3) for k, title in enumerate(titles)]
    return b"".join(data[:5]) + BROKEN + b"".join(data[5:])


def rdkit_records(data: bytes) -> list:
    supplier = Chem.SDMolSupplier()
    supplier.SetData(data.decode(), removeHs=False)
    return list(supplier)


def same_mol(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    private = a.GetPropsAsDict(includePrivate=True) == b.GetPropsAsDict(includePrivate=True)
    return Chem.MolToMolBlock(a) == Chem.MolToMolBlock(b) and private


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
@pytest.mark.parametrize(
    "variant", ["plain", "crlf", "no final terminator", "trailing blank lines", "empty record", "suffixed terminator"]
)
def test_split_records_and_their_molecules_match_rdkit(variant, chunk):
    data = odd_file()
    if variant == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif variant == "no final terminator":
        data = data[: data.rindex(b"$$$$")]
    elif variant == "trailing blank lines":
        data += b"\n  \n\n"
    elif variant == "empty record":
        data = data.replace(BROKEN, BROKEN + b"$$$$\n")
    elif variant == "suffixed terminator":
        data = data.replace(b"$$$$\n", b"$$$$ end\n", 3)
    texts = list(split_records(io.BytesIO(data), chunk))
    assert b"".join(texts).rstrip() == data.rstrip()  # every byte in one record, in order
    expected = rdkit_records(data)
    parse = RecordParser()
    mols = [parse(text) for text in texts]
    assert len(mols) == len(expected)
    assert all(same_mol(a, b) for a, b in zip(mols, expected))
    assert sum(m is None for m in mols) == (2 if variant == "empty record" else 1)
    for text, mol in zip(texts, mols):
        if mol is not None:
            assert record_title(text) == inputs.title(mol)  # the text's title is RDKit's, stripped


def test_a_file_that_is_not_utf8_is_parsed_from_its_bytes():
    text = record("CCO", "lig").replace(b"lig", b"l\xe9g", 1)
    mol = RecordParser()(text)
    assert mol is not None and mol.GetNumAtoms() == 9
    assert record_title(text) == "l\ufffdg"


def groups_of(path: Path, rank: int = 0, world: int = 1) -> list:
    item = PosesFile(path, "file", Path("rec.pdb"), score_property="score")
    return list(iter_groups([item], "name", rank, world))


def test_groups_by_title_are_those_of_rdkit_titles(tmp_path):
    """Runs of one title (stripped) are a ligand, a title met again later gets #2, an empty title joins the
    ligand before; a record RDKit cannot parse keeps its title line (``ligX``: a ligand of its own, a failure
    row of it when scored) and its text."""
    path = tmp_path / "odd.sdf"
    path.write_bytes(odd_file())
    groups = groups_of(path)
    names = [g.complex_id for g in groups]
    assert names == ["1", "NA", "lead", "ligX", "trail", "dup", "NA#2", "1#2"]
    assert [len(g.records) for g in groups] == [2, 1, 2, 1, 1, 3, 1, 2]
    assert groups[3].records == [None] and groups[3].texts == [BROKEN]
    expected = [m for m in rdkit_records(odd_file())]
    got = [m for g in groups for m in g.records]
    assert all(same_mol(a, b) for a, b in zip(got, expected)) and len(got) == len(expected)
    assert [g.seq for g in groups] == list(range(8))


def test_each_rank_parses_only_its_own_groups(tmp_path, monkeypatch):
    path = tmp_path / "odd.sdf"
    path.write_bytes(odd_file())
    parsed = []
    call = RecordParser.__call__
    monkeypatch.setattr(RecordParser, "__call__", lambda self, text: parsed.append(text) or call(self, text))
    whole = groups_of(path)
    assert len(parsed) == 13
    parts = []
    for rank in range(3):
        parsed.clear()
        mine = groups_of(path, rank, 3)
        assert len(parsed) == sum(len(g.records) for g in mine)
        assert [g.seq % 3 for g in mine] == [rank] * len(mine)
        parts.extend(mine)
    parts.sort(key=lambda g: g.seq)
    assert [(g.complex_id, g.texts) for g in parts] == [(g.complex_id, g.texts) for g in whole]


def test_a_written_record_reads_back_as_its_input_with_the_scores():
    text = record("c1ccccc1O", "lig", vina_score=-7.25, pecan_score="old")
    properties = {"pecan_complex": "lig", "pecan_pose": "lig_pose1", "pecan_score": 0.1234, "pecan_rank": 1}
    written = with_properties(text, properties)
    assert written.count(b"<pecan_score>") == 1 and written.endswith(b"$$$$\n")
    back = Chem.MolFromMolBlock(written.decode(), removeHs=False)
    source = RecordParser()(text)
    assert Chem.MolToMolBlock(back) == Chem.MolToMolBlock(source)
    mol = rdkit_records(written)[0]
    assert mol.GetPropsAsDict() == {"vina_score": -7.25, **properties}
    assert written.startswith(text[: text.index(b"M  END")])  # the input's own lines, as they were


@pytest.mark.parametrize(
    "tail",
    [b"M  END\n$$$$\n", b"M  END\n> <a>\nx\n$$$$\n", b"M  END\r\n> <a>\r\nx\r\n\r\n$$$$\r\n", b"M  END\n> <a>\nx\n"],
)
def test_properties_are_added_after_any_property_block_ending(tail):
    text = record("CCO", "lig").split(b"M  END")[0] + tail
    mol = rdkit_records(with_properties(text, {"pecan_rank": 2, "rmsd": 1.5}))[0]
    assert mol.GetProp("pecan_rank") == "2" and mol.GetProp("rmsd") == "1.5"
    assert mol.GetPropsAsDict().get("a", "x") == "x"


def test_property_values_are_written_as_rdkit_writes_them():
    mol = Chem.MolFromSmiles("C")
    for value in (0.1670862539396854, 0.9171249073534228, 1e-300, 1e20, 0.5, float("nan"), -3.0):
        mol.SetDoubleProp("x", value)
        assert property_value(value) == mol.GetProp("x")
    mol.SetIntProp("i", 7)
    assert property_value(7) == mol.GetProp("i")


def test_a_record_without_text_is_written_as_rdkit_writes_it():
    mol = Chem.MolFromSmiles("CCO")
    mol.SetProp("_Name", "m2")
    written = with_properties(sdf_text.rdkit_record(mol), {"pecan_rank": 1})
    back = rdkit_records(written)[0]
    assert back.GetProp("_Name") == "m2" and back.GetProp("pecan_rank") == "1"


def test_scored_output_writes_texts_as_read_and_molecules_without_text_as_rdkit_writes_them(tmp_path):
    """A poses file's records keep their text; a mol2 or PDB record (no text) is RDKit's rendering; both get
    the scores, and a part's groups log gives each group's bytes for the join."""
    import pandas as pd

    from pecan.scoring.output import ScoredOutput

    text = record("CCO", "a", vina_score=-5.5)
    mol = Chem.AddHs(Chem.MolFromSmiles("c1ccccc1"))
    mol.SetProp("_Name", "b")
    scores = pd.DataFrame(
        {
            "complex_id": ["a", "b"],
            "pose_id": ["a", "b"],
            "split": ["unknown", "unknown"],
            "pecan_score": [0.25, 0.75],
            "pecan_rank": [1, 1],
            "docking_score": [-5.5, float("nan")],
            "rmsd": [float("nan"), float("nan")],
            "label": pd.array([pd.NA, pd.NA], dtype="Int64"),
            "pecan_clash": [0, 0],
            "receptor_distance": [3.25, 2.5],
            "logit": [-1.0986, 1.0986],
        }
    )
    out = ScoredOutput(tmp_path / "part.sdf", part=True)
    out.write_groups(scores, [(0, [RecordParser()(text)], [text], False), (3, [mol], None, False)])
    out.flush()
    out.commit({})
    written = (tmp_path / "part.sdf").read_bytes()
    assert written.startswith(text[: text.index(b"$$$$")])
    back = rdkit_records(written)
    assert [m.GetProp("_Name") for m in back] == ["a", "b"] and back[1].GetNumAtoms() == 12
    assert [m.GetProp("pecan_score") for m in back] == ["0.25", "0.75"]
    sizes = [int(line.split(",")[2]) for line in (tmp_path / "part.groups").read_text().splitlines()]
    assert sum(sizes) == len(written) and written[: sizes[0]].endswith(b"$$$$\n")
