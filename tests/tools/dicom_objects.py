#!/usr/bin/python3
"""DICOM test objects for tests/test_dicom_gateway.py, made with pydicom
(Debian's python3-pydicom; run with /usr/bin/python3).

  dicom_objects.py study DIR SLICES PATIENT STUDY_DATE [MODALITY [ROWS]]
                                                          slices of one study (ROWSxROWS, default 64, 16 bit;
                                                          default CT)
  dicom_objects.py multiframe FILE FRAMES                 one multi-frame image (256x256, 16 bit)
  dicom_objects.py framed FILE FRAMES ROWS                one multi-frame image (ROWSxROWS, 16 bit) whose frames
                                                          all differ (frame N's first byte is N mod 256; for
                                                          DICOMweb frame retrieval)
  dicom_objects.py nouid FILE                             a CT slice whose data set has no SOP Instance UID
  dicom_objects.py truncated FILE                         a CT slice cut in the middle of its pixel data
  dicom_objects.py shortpixels FILE                       a CT slice, whole, whose pixel data holds half of
                                                          what its Rows x Columns x Bits Allocated need
  dicom_objects.py brokenheader FILE                      a CT slice cut inside its header, after PatientID
  dicom_objects.py variant FILE OTHER                     OTHER: FILE's instance with another pixel value
  dicom_objects.py samesop FILE PATIENT_FILE OTHER        OTHER: PATIENT_FILE's data set (patient, study, series)
                                                          under FILE's SOP Instance UID
  dicom_objects.py setuid FILE KEYWORD VALUE              a CT slice whose KEYWORD (a UID) is VALUE, as it is
  dicom_objects.py charsets DIR                           one CT slice per Specific Character Set (ISO_IR 100,
                                                          101, 144, 192, GB18030, ISO 2022 IR 87, ISO 2022 IR 13
                                                          with IR 87), each its own
                                                          patient and study with text in that set, and one whose
                                                          PatientName holds a byte its (default) set lacks;
                                                          each entry also has "charset" and the expected text
  dicom_objects.py text DIR                               CT slices whose text holds control characters (a
                                                          newline, ESC sequences)
  dicom_objects.py keys DIR                               attributes the index has no column for: a study of
                                                          patient "Müller^Jürgen" in ISO_IR 100 (PatientSex,
                                                          ReferringPhysicianName) with two series (their
                                                          SeriesDescription, BodyPartExamined), and a study of
                                                          "Müller^Ωmega" in ISO_IR 192 (Ω: not in Latin-1)
Prints one JSON line: the files written with their SOP Instance, Study
Instance and Series Instance UIDs."""

import json
import os
import sys

from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid, SecondaryCaptureImageStorage
import pydicom


def image(sop_class, rows, cols, frames=1, patient="PAT1", study_uid=None, series_uid=None, number=1,
          study_date="20261115", modality="CT", fill=0):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = sop_class
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.PatientID = patient
    ds.PatientName = "Doe^" + patient
    ds.PatientBirthDate = "19700101"
    ds.StudyInstanceUID = study_uid or generate_uid()
    ds.SeriesInstanceUID = series_uid or generate_uid()
    ds.StudyDate = study_date
    ds.StudyTime = "101500"
    ds.AccessionNumber = "ACC-" + patient
    ds.StudyDescription = "Chest " + modality
    ds.Modality = modality
    ds.SeriesNumber = 1
    ds.InstanceNumber = number
    ds.Rows, ds.Columns = rows, cols
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    if frames > 1:
        ds.NumberOfFrames = frames
    size = rows * cols * 2 * frames
    period = bytes(((i * 7 + number + fill) & 0xFF) for i in range(256))  # the pattern repeats every 256 bytes
    ds.PixelData = (period * (size // 256 + 1))[:size]
    return ds


def save(ds, path):
    ds.is_little_endian, ds.is_implicit_VR = True, False
    pydicom.dcmwrite(path, ds, write_like_original=False)
    return {"path": path, "sop": ds.file_meta.MediaStorageSOPInstanceUID, "study": ds.StudyInstanceUID,
            "series": ds.SeriesInstanceUID}


# (name, Specific Character Set, PatientID, PatientName, AccessionNumber, StudyDescription)
CHARSETS = [
    ("latin1", "ISO_IR 100", "MÜLLER", "Müller^Jürgen", "ÄÖ-1", "Thorax präop"),
    ("latin2", "ISO_IR 101", "CS-LATIN2", "Wałęsa^Lech", "ACC-Ł", "Łódź"),
    ("cyrillic", "ISO_IR 144", "CS-CYRILLIC", "Иванов^Иван", "АБВ-1", "Грудная клетка"),
    ("utf8", "ISO_IR 192", "CS-UTF8", "Gößmann^Ωmega", "ACC-Ω", "Thorax ☤"),
    ("gb18030", "GB18030", "CS-GB18030", "王^小东", "编号1", "胸部"),
    ("japanese", "\\ISO 2022 IR 87", "CS-JAPANESE", "Yamada^Tarou=山田^太郎=やまだ^たろう", "ACC-JP", "胸部CT"),
    ("japanese13", "ISO 2022 IR 13\\ISO 2022 IR 87", "CS-JAPANESE-13", "ﾔﾏﾀﾞ^ﾀﾛｳ=山田^太郎=やまだ^たろう", "ACC-JP13",
     "ﾑﾈ"),
]


def charsets(directory):
    os.makedirs(directory, exist_ok=True)
    out = []
    for name, charset, patient, person, accession, description in CHARSETS:
        ds = image(CTImageStorage, 16, 16, patient=patient)
        ds.SpecificCharacterSet = charset.split("\\") if "\\" in charset else charset
        ds.PatientName, ds.AccessionNumber, ds.StudyDescription = person, accession, description
        entry = save(ds, os.path.join(directory, f"{name}.dcm"))
        entry.update(name=name, charset=charset, PatientID=patient, PatientName=person, AccessionNumber=accession,
                     StudyDescription=description)
        out.append(entry)
    # No Specific Character Set (ASCII) but a Latin-1 byte: not decodable.
    ds = image(CTImageStorage, 16, 16, patient="CS-RAW")
    ds.add_new(0x00100010, "PN", b"M\xfcller^Raw")
    entry = save(ds, os.path.join(directory, "undecodable.dcm"))
    entry.update(name="undecodable", charset="", PatientID="CS-RAW", PatientName="M\\xFCller^Raw",
                 AccessionNumber="ACC-CS-RAW", StudyDescription="Chest CT")
    out.append(entry)
    return out


def text(directory):
    """Text with control characters: a newline in StudyDescription, ESC
    sequences in PatientName and PatientID."""
    os.makedirs(directory, exist_ok=True)
    ds = image(CTImageStorage, 16, 16, patient="CTRL\x1b[31m1")
    ds.PatientName = "Evil^\x1b]0;owned\x07"
    ds.StudyDescription = "Chest\nFORGED\tROW\x1b[2J"
    ds.AccessionNumber = "ACC\r1"
    entry = save(ds, os.path.join(directory, "control.dcm"))
    entry.update(PatientID=ds.PatientID, PatientName=str(ds.PatientName), StudyDescription=ds.StudyDescription,
                 AccessionNumber=ds.AccessionNumber)
    return [entry]


# (name, Specific Character Set, PatientID, PatientName, PatientSex, ReferringPhysicianName,
#  [(SeriesDescription, BodyPartExamined), ...])
KEYS = [
    ("latin1", "ISO_IR 100", "KEYS-1", "Müller^Jürgen", "F", "Weiß^Anna",
     [("Thorax präop", "CHEST"), ("Abdomen nativ", "ABDOMEN")]),
    ("utf8", "ISO_IR 192", "KEYS-2", "Müller^Ωmega", "M", "Ørsted^Hans", [("Schädel", "HEAD")]),
]


def keys(directory):
    os.makedirs(directory, exist_ok=True)
    out = []
    for name, charset, patient, person, sex, referring, series in KEYS:
        study = generate_uid()
        for n, (description, body_part) in enumerate(series, 1):
            ds = image(CTImageStorage, 16, 16, patient=patient, study_uid=study, number=n)
            ds.SpecificCharacterSet = charset
            ds.PatientName, ds.PatientSex, ds.ReferringPhysicianName = person, sex, referring
            ds.SeriesDescription, ds.BodyPartExamined, ds.SeriesNumber = description, body_part, n
            entry = save(ds, os.path.join(directory, f"{name}-{n}.dcm"))
            entry.update(name=name, charset=charset, PatientID=patient, PatientName=person, PatientSex=sex,
                         ReferringPhysicianName=referring, SeriesDescription=description,
                         BodyPartExamined=body_part)
            out.append(entry)
    return out


def main(argv):
    kind = argv[1]
    out = []
    if kind == "study":
        directory, slices, patient, date = argv[2], int(argv[3]), argv[4], argv[5]
        modality = argv[6] if len(argv) > 6 else "CT"
        rows = int(argv[7]) if len(argv) > 7 else 64
        os.makedirs(directory, exist_ok=True)
        study, series = generate_uid(), generate_uid()
        for n in range(1, slices + 1):
            ds = image(CTImageStorage, rows, rows, patient=patient, study_uid=study, series_uid=series, number=n,
                       study_date=date, modality=modality)
            out.append(save(ds, os.path.join(directory, f"slice{n:04d}.dcm")))
    elif kind == "multiframe":
        out.append(save(image(SecondaryCaptureImageStorage, 256, 256, frames=int(argv[3]), patient="PAT2",
                              modality="OT"), argv[2]))
    elif kind == "framed":
        frames, rows = int(argv[3]), int(argv[4])
        ds = image(SecondaryCaptureImageStorage, rows, rows, frames=frames, patient="PAT7", modality="OT")
        frame = rows * rows * 2
        ds.PixelData = b"".join(bytes([n % 256, n // 256 % 256]) + ds.PixelData[:frame - 2]
                                for n in range(1, frames + 1))
        out.append(save(ds, argv[2]))
    elif kind == "nouid":
        ds = image(CTImageStorage, 64, 64, patient="PAT3")
        del ds.SOPInstanceUID  # the meta header keeps it, so that a peer can still name it in its request
        out.append(save(ds, argv[2]))
    elif kind == "truncated":
        entry = save(image(CTImageStorage, 64, 64, patient="PAT4"), argv[2])
        size = os.path.getsize(argv[2])
        with open(argv[2], "r+b") as f:
            f.truncate(size - 4096)
        out.append(entry)
    elif kind == "shortpixels":
        ds = image(CTImageStorage, 64, 64, patient="PAT6")
        ds.PixelData = ds.PixelData[:len(ds.PixelData) // 2]
        out.append(save(ds, argv[2]))
    elif kind == "brokenheader":
        entry = save(image(CTImageStorage, 64, 64, patient="PAT5"), argv[2])
        with open(argv[2], "rb") as f:
            data = f.read()
        cut = data.index(b"\x20\x00\x0d\x00UI") + 10  # inside the Study Instance UID's value
        with open(argv[2], "wb") as f:
            f.write(data[:cut])
        out.append(entry)
    elif kind == "charsets":
        out = charsets(argv[2])
    elif kind == "text":
        out = text(argv[2])
    elif kind == "keys":
        out = keys(argv[2])
    elif kind == "variant":
        ds = pydicom.dcmread(argv[2])
        ds.PixelData = bytes((b ^ 0x55) for b in ds.PixelData)
        out.append(save(ds, argv[3]))
    elif kind == "samesop":
        sop = pydicom.dcmread(argv[2]).SOPInstanceUID
        ds = pydicom.dcmread(argv[3])
        ds.SOPInstanceUID = ds.file_meta.MediaStorageSOPInstanceUID = sop
        out.append(save(ds, argv[4]))
    elif kind == "setuid":
        ds = image(CTImageStorage, 64, 64, patient="PAT10")
        setattr(ds, argv[3], argv[4])
        if argv[3] == "SOPInstanceUID":
            ds.file_meta.MediaStorageSOPInstanceUID = argv[4]
        out.append(save(ds, argv[2]))
    else:
        sys.exit(f"unknown kind {kind}")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
