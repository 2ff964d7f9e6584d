"""Pure-Python parser of SST DUMPI binary trace files (``*.bin``) and their ``.meta`` file.

Layout (studied from sst-dumpi's documentation and I/O routines; all integers big-endian):

* 8-byte magic ``ff aa dd 'D' 'U' 'M' 'P' 'I'``;
* an index at the end of the file: up to eight 64-bit words, the last seven being offsets
  (datatype sizes, function addresses, perf labels, header, body, footer, keyval); older
  files have fewer, each extra word replaced by the magic;
* header: version (3 bytes), start time (64 bit), hostname, username (16-bit length
  strings), mesh info;
* body: two int32 time biases (cpu, wall seconds), then records: uint16 function label,
  uint8 mask, [uint16 thread], [cpu times], [wall times], [perf counters], arguments.
  Times are (uint16 s + bias, uint32 ns) for entry and exit. The stream ends with the
  label ``DUMPI_END_OF_STREAM``.

Records carry no length, so every argument layout must be known: :data:`LAYOUTS` covers
the MPI-1/MPI-2 calls DUMPI records except MPI-IO data calls, spawn and Pcontrol; an
unknown label stops the read with an error naming the record.
"""
from __future__ import annotations

import os
import struct

from ccmod.errors import CcmodInputError

MAGIC = b"\xff\xaa\xddDUMPI"
_MAGIC_U64 = struct.unpack(">Q", MAGIC)[0]

# Function labels in DUMPI's order (their index is the label written in the stream).
FUNCTIONS = (
    "Send Recv Get_count Bsend Ssend Rsend Buffer_attach Buffer_detach Isend Ibsend Issend "
    "Irsend Irecv Wait Test Request_free Waitany Testany Waitall Testall Waitsome Testsome "
    "Iprobe Probe Cancel Test_cancelled Send_init Bsend_init Ssend_init Rsend_init Recv_init "
    "Start Startall Sendrecv Sendrecv_replace Type_contiguous Type_vector Type_hvector "
    "Type_indexed Type_hindexed Type_struct Address Type_extent Type_size Type_lb Type_ub "
    "Type_commit Type_free Get_elements Pack Unpack Pack_size Barrier Bcast Gather Gatherv "
    "Scatter Scatterv Allgather Allgatherv Alltoall Alltoallv Reduce Op_create Op_free "
    "Allreduce Reduce_scatter Scan Group_size Group_rank Group_translate_ranks Group_compare "
    "Comm_group Group_union Group_intersection Group_difference Group_incl Group_excl "
    "Group_range_incl Group_range_excl Group_free Comm_size Comm_rank Comm_compare Comm_dup "
    "Comm_create Comm_split Comm_free Comm_test_inter Comm_remote_size Comm_remote_group "
    "Intercomm_create Intercomm_merge Keyval_create Keyval_free Attr_put Attr_get Attr_delete "
    "Topo_test Cart_create Dims_create Graph_create Graphdims_get Graph_get Cartdim_get "
    "Cart_get Cart_rank Cart_coords Graph_neighbors_count Graph_neighbors Cart_shift Cart_sub "
    "Cart_map Graph_map Get_processor_name Get_version Errhandler_create Errhandler_set "
    "Errhandler_get Errhandler_free Error_string Error_class Wtime Wtick Init Finalize "
    "Initialized Abort Pcontrol Close_port Comm_accept Comm_connect Comm_disconnect "
    "Comm_get_parent Comm_join Comm_spawn Comm_spawn_multiple Lookup_name Open_port "
    "Publish_name Unpublish_name Accumulate Get Put Win_complete Win_create Win_fence "
    "Win_free Win_get_group Win_lock Win_post Win_start Win_test Win_unlock Win_wait "
    "Alltoallw Exscan Add_error_class Add_error_code Add_error_string Comm_call_errhandler "
    "Comm_create_keyval Comm_delete_attr Comm_free_keyval Comm_get_attr Comm_get_name "
    "Comm_set_attr Comm_set_name File_call_errhandler Grequest_complete Grequest_start "
    "Init_thread Is_thread_main Query_thread Status_set_cancelled Status_set_elements "
    "Type_create_keyval Type_delete_attr Type_dup Type_free_keyval Type_get_attr "
    "Type_get_contents Type_get_envelope Type_get_name Type_set_attr Type_set_name "
    "Type_match_size Win_call_errhandler Win_create_keyval Win_delete_attr Win_free_keyval "
    "Win_get_attr Win_get_name Win_set_attr Win_set_name Alloc_mem Comm_create_errhandler "
    "Comm_get_errhandler Comm_set_errhandler File_create_errhandler File_get_errhandler "
    "File_set_errhandler Finalized Free_mem Get_address Info_create Info_delete Info_dup "
    "Info_free Info_get Info_get_nkeys Info_get_nthkey Info_get_valuelen Info_set "
    "Pack_external Pack_external_size Request_get_status Type_create_darray "
    "Type_create_hindexed Type_create_hvector Type_create_indexed_block Type_create_resized "
    "Type_create_struct Type_create_subarray Type_get_extent Type_get_true_extent "
    "Unpack_external Win_create_errhandler Win_get_errhandler Win_set_errhandler File_open "
    "File_close File_delete File_set_size File_preallocate File_get_size File_get_group "
    "File_get_amode File_set_info File_get_info File_set_view File_get_view File_read_at "
    "File_read_at_all File_write_at File_write_at_all File_iread_at File_iwrite_at File_read "
    "File_read_all File_write File_write_all File_iread File_iwrite File_seek "
    "File_get_position File_get_byte_offset File_read_shared File_write_shared "
    "File_iread_shared File_iwrite_shared File_read_ordered File_write_ordered "
    "File_seek_shared File_get_position_shared File_read_at_all_begin File_read_at_all_end "
    "File_write_at_all_begin File_write_at_all_end File_read_all_begin File_read_all_end "
    "File_write_all_begin File_write_all_end File_read_ordered_begin File_read_ordered_end "
    "File_write_ordered_begin File_write_ordered_end File_get_type_extent Register_datarep "
    "File_set_atomicity File_get_atomicity File_sync IO_Test IO_Wait IO_Testall IO_Waitall "
    "IO_Testany IO_Waitany IO_Waitsome IO_Testsome").split()
ALL_FUNCTIONS = len(FUNCTIONS)
FUNC_ENTER, FUNC_EXIT, END_OF_STREAM = ALL_FUNCTIONS + 1, ALL_FUNCTIONS + 2, ALL_FUNCTIONS + 3

# Argument layouts: "code:name" items. i=int32 h=uint16 (handles) b=uint8 l=int64
# A=int32 array, D=uint16 array, B=uint8 array, C=char array, Z=array of int32 arrays,
# S=status(es). Groups of identical layouts are expanded below.
_P2P_SEND = "i:count h:datatype i:dest i:tag h:comm"
_P2P_ISEND = _P2P_SEND + " i:request"
_TYPE_V = "i:count i:blocklength i:stride h:oldtype h:newtype"
_TYPE_IDX = "i:count A:lengths A:indices h:oldtype h:newtype"
_G3 = "h:group1 h:group2 h:newgroup"
_GINCL = "h:group i:count A:ranks h:newgroup"
_GRANGE = "h:group i:count Z:ranges h:newgroup"
_ONE_H = "h:handle"
_TWO_H = "h:handle h:handle2"
_LAYOUT_SRC = {
    "Send Bsend Ssend Rsend": _P2P_SEND,
    "Recv": "i:count h:datatype i:source i:tag h:comm S:status",
    "Get_count": "S:status h:datatype i:count",
    "Buffer_attach Buffer_detach": "i:size",
    "Isend Ibsend Issend Irsend Send_init Bsend_init Ssend_init Rsend_init": _P2P_ISEND,
    "Irecv Recv_init": "i:count h:datatype i:source i:tag h:comm i:request",
    "Wait": "i:request S:status",
    "Test": "i:request i:flag S:status",
    "Request_free Cancel Start Grequest_complete Grequest_start": "i:request",
    "Waitany": "i:count A:requests i:index S:status",
    "Testany": "i:count A:requests i:index i:flag S:status",
    "Waitall": "i:count A:requests S:statuses",
    "Testall": "i:count A:requests i:flag S:statuses",
    "Waitsome Testsome": "i:count A:requests i:outcount A:indices S:statuses",
    "Iprobe": "i:source i:tag h:comm i:flag S:status",
    "Probe": "i:source i:tag h:comm S:status",
    "Test_cancelled": "S:status i:cancelled",
    "Startall": "i:count A:requests",
    "Sendrecv": "i:sendcount h:sendtype i:dest i:sendtag i:recvcount h:recvtype i:source "
                "i:recvtag h:comm S:status",
    "Sendrecv_replace": "i:count h:datatype i:dest i:sendtag i:source i:recvtag h:comm "
                        "S:status",
    "Type_contiguous": "i:count h:oldtype h:newtype",
    "Type_vector Type_hvector Type_create_hvector": _TYPE_V,
    "Type_indexed Type_hindexed Type_create_hindexed": _TYPE_IDX,
    "Address Get_address": "i:address",
    "Type_extent Type_size Type_lb Type_ub": "h:datatype i:value",
    "Type_commit Type_free": "h:datatype",
    "Get_elements": "S:status h:datatype i:elements",
    "Pack": "i:incount h:datatype i:outcount i:posin i:posout h:comm",
    "Unpack": "i:incount i:posin i:posout i:outcount h:datatype h:comm",
    "Pack_size": "i:incount h:datatype h:comm i:size",
    "Barrier": "h:comm",
    "Bcast": "i:count h:datatype i:root h:comm",
    "Allgather Alltoall": "i:sendcount h:sendtype i:recvcount h:recvtype h:comm",
    "Allgatherv": "i:commsize i:sendcount h:sendtype A:recvcounts A:displs h:recvtype h:comm",
    "Alltoallv": "i:commsize A:sendcounts A:senddispls h:sendtype A:recvcounts A:recvdispls "
                 "h:recvtype h:comm",
    "Reduce": "i:count h:datatype b:op i:root h:comm",
    "Op_create": "i:commute b:op",
    "Op_free": "b:op",
    "Allreduce Scan Exscan": "i:count h:datatype b:op h:comm",
    "Reduce_scatter": "i:commsize A:recvcounts h:datatype b:op h:comm",
    "Group_size": "h:group i:size",
    "Group_rank": "h:group i:rank",
    "Group_translate_ranks": "h:group1 i:count A:ranks1 h:group2 A:ranks2",
    "Group_compare Comm_compare": "h:handle h:handle2 b:result",
    "Comm_group": "h:comm h:group",
    "Group_union Group_intersection Group_difference": _G3,
    "Group_incl Group_excl": _GINCL,
    "Group_range_incl Group_range_excl": _GRANGE,
    "Comm_size": "h:comm i:size",
    "Comm_rank": "h:comm i:rank",
    "Comm_dup": "h:oldcomm h:newcomm",
    "Comm_create": "h:oldcomm h:group h:newcomm",
    "Comm_split": "h:oldcomm i:color i:key h:newcomm",
    "Comm_test_inter Comm_remote_size Attr_put Attr_delete Comm_call_errhandler "
    "File_call_errhandler Win_call_errhandler Win_test Cartdim_get": "h:handle i:value",
    "Comm_remote_group Win_get_group Comm_set_attr Comm_delete_attr Type_set_attr "
    "Type_delete_attr Win_set_attr Win_delete_attr Errhandler_set Errhandler_get "
    "Comm_get_errhandler Comm_set_errhandler File_get_errhandler File_set_errhandler "
    "Win_get_errhandler Win_set_errhandler Info_dup File_get_group": _TWO_H,
    "Type_dup": "h:oldtype h:newtype",
    "Intercomm_create": "h:localcomm i:localleader h:remotecomm i:remoteleader i:tag "
                        "h:newcomm",
    "Intercomm_merge": "h:comm i:high h:newcomm",
    "Keyval_create Keyval_free Group_free Comm_free Errhandler_create Errhandler_free "
    "Comm_disconnect Comm_get_parent Win_complete Win_free Win_wait Comm_create_keyval "
    "Comm_free_keyval Type_create_keyval Type_free_keyval Win_create_keyval Win_free_keyval "
    "Comm_create_errhandler File_create_errhandler Win_create_errhandler Info_create "
    "Info_free File_close": _ONE_H,
    "Attr_get Graphdims_get Graph_neighbors_count": "h:handle i:value i:value2",
    "Comm_get_attr Type_get_attr Win_get_attr": "h:handle h:handle2 i:flag",
    "Topo_test": "h:comm b:topo",
    "Cart_create": "h:oldcomm i:ndim A:dims A:periods i:reorder h:newcomm",
    "Dims_create": "i:nodes i:ndim A:dimsin A:dimsout",
    "Graph_create": "i:numedges h:oldcomm i:nodes A:index A:edges i:reorder h:newcomm",
    "Graph_get": "i:totedges i:totnodes h:comm i:maxindex i:maxedges A:index A:edges",
    "Cart_rank": "i:ndim h:comm A:coords i:rank",
    "Cart_coords": "i:ndim h:comm i:rank i:maxdims A:coords",
    "Graph_neighbors": "i:nneigh h:comm i:rank i:maxneighbors A:neighbors",
    "Cart_shift": "h:comm i:direction i:displ i:source i:dest",
    "Cart_sub": "i:ndim h:oldcomm A:remain_dims h:newcomm",
    "Cart_map": "h:comm i:ndim A:dims A:period i:newrank",
    "Graph_map": "i:numedges h:comm i:nodes A:index A:edges i:newrank",
    "Get_processor_name": "C:name i:resultlen",
    "Get_version Error_class Add_error_code": "i:value i:value2",
    "Error_string": "i:errorcode C:string i:resultlen",
    "Wtime Wtick Finalize Free_mem": "",
    "Initialized Is_thread_main Finalized Add_error_class": "i:value",
    "Abort": "h:comm i:errorcode",
    "Close_port": "C:portname",
    "Comm_accept Comm_connect": "C:portname h:info i:root h:oldcomm h:newcomm",
    "Comm_join": "i:fd h:comm",
    "Lookup_name Publish_name Unpublish_name": "C:service h:info C:portname",
    "Open_port": "h:info C:portname",
    "Accumulate": "i:origincount h:origintype i:targetrank i:targetdisp i:targetcount "
                  "h:targettype b:op h:win",
    "Get Put": "i:origincount h:origintype i:targetrank i:targetdisp i:targetcount "
               "h:targettype h:win",
    "Win_create": "i:size i:dispunit h:info h:comm h:win",
    "Win_fence": "b:assertion h:win",
    "Win_lock": "b:locktype i:winrank b:assertion h:win",
    "Win_post Win_start": "h:group b:assertion h:win",
    "Win_unlock": "i:winrank h:win",
    "Alltoallw": "i:commsize A:sendcounts A:senddispls D:sendtypes A:recvcounts "
                 "A:recvdispls D:recvtypes h:comm",
    "Add_error_string": "i:errorcode C:string",
    "Comm_get_name Type_get_name Win_get_name": "h:handle C:name i:resultlen",
    "Comm_set_name Type_set_name Win_set_name": "h:handle C:name",
    "Query_thread": "b:supported",
    "Status_set_cancelled": "S:status i:flag",
    "Status_set_elements": "S:status h:datatype i:count",
    "Type_get_contents": "i:numdatatypes i:numaddresses i:numintegers h:datatype "
                         "i:maxintegers i:maxaddresses i:maxdatatypes A:integers "
                         "A:addresses D:datatypes",
    "Type_get_envelope": "h:datatype i:numintegers i:numaddresses i:numdatatypes "
                         "b:combiner",
    "Type_match_size": "b:typeclass i:size h:datatype",
    "Alloc_mem": "i:size h:info",
    "Info_delete": "h:info C:key",
    "Info_get": "h:info C:key i:valuelen C:value i:flag",
    "Info_get_nkeys": "h:info i:nkeys",
    "Info_get_nthkey": "h:info i:n C:key",
    "Info_get_valuelen": "h:info C:key i:valuelen i:flag",
    "Info_set": "h:info C:key C:value",
    "Pack_external": "C:datarep i:incount h:datatype i:outcount i:posin i:posout",
    "Pack_external_size": "C:datarep i:incount h:datatype i:size",
    "Request_get_status": "i:request i:flag S:status",
    "Type_create_darray": "i:size i:rank i:ndims A:gsizes B:distribs A:dargs A:psizes "
                          "b:order h:oldtype h:newtype",
    "Type_create_indexed_block": "i:count i:blocklength A:indices h:oldtype h:newtype",
    "Type_create_resized": "h:oldtype i:lb i:extent h:newtype",
    "Type_create_struct": "i:count A:lengths A:indices D:oldtypes h:newtype",
    "Type_create_subarray": "i:ndims A:sizes A:subsizes A:starts b:order h:oldtype "
                            "h:newtype",
    "Type_get_extent Type_get_true_extent": "h:datatype i:lb i:extent",
    "Unpack_external": "C:datarep i:insize i:posin i:posout i:outcount h:datatype",
    "File_open": "h:comm C:filename b:amode h:info h:file",
    "File_delete": "C:filename h:info",
    "File_set_size File_preallocate File_get_size": "h:file l:size",
    "File_get_amode": "h:file b:amode",
}
LAYOUTS: dict[int, list[tuple[str, str]]] = {}
for _names, _spec in _LAYOUT_SRC.items():
    _items = [tuple(x.split(":")) for x in _spec.split()]
    for _n in _names.split():
        if _n in FUNCTIONS:
            LAYOUTS[FUNCTIONS.index(_n)] = _items
# layouts with version- or value-dependent parts are decoded by _special()
_SPECIAL = {FUNCTIONS.index(n) for n in ("Gather", "Gatherv", "Scatter", "Scatterv", "Init",
                                         "Init_thread", "Type_struct", "Cart_get")}


def version_at_least(v, a, b, c) -> bool:
    return tuple(v) >= (a, b, c)


class BinTrace:
    """One DUMPI ``.bin`` file: header, datatype sizes and the record stream.

    Parameters
    ----------
    path : str
        File name (used in error messages).
    data : bytes
        Whole file content.
    """

    def __init__(self, path: str, data: bytes):
        self.path, self.d = path, data
        n = len(data)
        if n < 8 or data[:8] != MAGIC:
            raise CcmodInputError("not a DUMPI trace (bad magic)", source=path, line=1,
                                  hint="DUMPI .bin files start with ff aa dd 'DUMPI'")
        if n < 72:
            raise CcmodInputError("DUMPI file too short for its index record (truncated?)",
                                  source=path)
        idx = struct.unpack(">8Q", data[-64:])
        words = list(idx)
        # find the magic that starts the index (newer files: words[0])
        k = next((i for i in range(0, 4) if words[i] == _MAGIC_U64), None)
        if k is None:
            raise CcmodInputError("DUMPI index record not found (truncated file?)", source=path)
        offs = words[k + 1:]
        names = ("sizelbl", "addrlbl", "perflbl", "header", "body", "footer", "keyval")[-len(offs):]
        self.off = dict(zip(names, offs))
        for key in ("header", "body"):
            o = self.off.get(key, 0)
            if not 8 <= o < n - 64:
                raise CcmodInputError(f"DUMPI index gives an impossible {key} offset {o}",
                                      source=path, hint="the file is truncated or corrupted")
        self.version = tuple(data[self.off["header"]:self.off["header"] + 3])
        p = self.off["header"] + 3
        (self.starttime,) = struct.unpack_from(">Q", data, p)
        p += 8
        self.hostname, p = self._string16(p)
        self.username, p = self._string16(p)
        self.type_sizes = self._type_sizes()
        self.perf_count = self._perf_count()
        self.cpu_bias, self.wall_bias = struct.unpack_from(">ii", data, self.off["body"])
        #: seconds subtracted from every time (set a common value for all ranks of a trace)
        self.time_base = self.wall_bias

    def _string16(self, p):
        (ln,) = struct.unpack_from(">H", self.d, p)
        return self.d[p + 2:p + 2 + ln].decode("latin-1"), p + 2 + ln

    def _type_sizes(self) -> list[int]:
        o = self.off.get("sizelbl", 0)
        if not o:
            return []
        (cnt,) = struct.unpack_from(">i", self.d, o)
        if not 0 <= cnt < 1 << 20:
            raise CcmodInputError(f"DUMPI datatype size table has {cnt} entries", source=self.path)
        return list(struct.unpack_from(f">{cnt}i", self.d, o + 4))

    def _perf_count(self) -> int:
        o = self.off.get("perflbl", 0)
        if not o:
            return 0
        (cnt,) = struct.unpack_from(">i", self.d, o)
        return max(cnt, 0)

    def records(self):
        """Yield ``(record_no, name, fields, wall_in, wall_out, cpu_in, cpu_out)``.

        Wall times are seconds since ``time_base``; cpu times are process cpu seconds.
        """
        d, unpack = self.d, struct.unpack_from
        p = self.off["body"]
        cpu_bias, wall_bias = self.cpu_bias, self.wall_bias - self.time_base
        p += 8
        end = len(d) - 64
        rec = 0
        ver = self.version
        status_tag = version_at_least(ver, 0, 6, 3)
        while True:
            rec += 1
            if p + 3 > end:
                raise CcmodInputError("DUMPI record stream ends without an end-of-stream mark "
                                      "(truncated file?)", source=self.path, line=rec)
            (label,) = unpack(">H", d, p)
            p += 2
            if label == END_OF_STREAM:
                return
            mask = d[p]
            p += 1
            if mask & 0x40:
                p += 2
            cin = cout = win = wout = None
            if mask & 0x04:
                s0, n0, s1, n1 = unpack(">HIHI", d, p)
                cin, cout = s0 + cpu_bias + n0 * 1e-9, s1 + cpu_bias + n1 * 1e-9
                p += 12
            if mask & 0x08:
                s0, n0, s1, n1 = unpack(">HIHI", d, p)
                win, wout = s0 + wall_bias + n0 * 1e-9, s1 + wall_bias + n1 * 1e-9
                p += 12
            if mask & 0x80:
                p += 1 + 16 * self.perf_count
            if label in (FUNC_ENTER, FUNC_EXIT):
                p += 8
                continue
            if label >= ALL_FUNCTIONS:
                raise CcmodInputError(f"invalid DUMPI function label {label}", source=self.path,
                                      line=rec, hint="the file is corrupted")
            name = FUNCTIONS[label]
            if label in _SPECIAL:
                fields, p = self._special(name, p, mask, status_tag)
            else:
                lay = LAYOUTS.get(label)
                if lay is None:
                    raise CcmodInputError(f"DUMPI record MPI_{name} is not supported by this "
                                          "reader", source=self.path, line=rec,
                                          hint="convert with dumpi2ascii and use the "
                                               "dumpi-ascii reader")
                fields, p = self._decode(lay, p, mask, status_tag)
            if p > end:
                raise CcmodInputError(f"DUMPI record MPI_{name} runs past the end of the "
                                      "stream (truncated file?)", source=self.path, line=rec)
            yield rec, name, fields, win, wout, cin, cout

    def _decode(self, lay, p, mask, status_tag):
        d, unpack = self.d, struct.unpack_from
        out = {}
        for code, name in lay:
            if code == "i":
                (out[name],) = unpack(">i", d, p)
                p += 4
            elif code == "h":
                (out[name],) = unpack(">H", d, p)
                p += 2
            elif code == "b":
                out[name] = d[p]
                p += 1
            elif code == "l":
                (out[name],) = unpack(">q", d, p)
                p += 8
            elif code in "ADBC":
                (cnt,) = unpack(">i", d, p)
                p += 4
                if cnt < 0 or cnt > len(d):
                    raise struct.error(f"array length {cnt} out of range")
                if code == "A":
                    out[name] = list(unpack(f">{cnt}i", d, p))
                    p += 4 * cnt
                elif code == "D":
                    out[name] = list(unpack(f">{cnt}H", d, p))
                    p += 2 * cnt
                else:
                    out[name] = d[p:p + cnt]
                    p += cnt
            elif code == "Z":
                (cnt,) = unpack(">i", d, p)
                p += 4
                if cnt < 0 or cnt > len(d):
                    raise struct.error(f"array length {cnt} out of range")
                rows = []
                for _ in range(cnt):
                    (m,) = unpack(">i", d, p)
                    if m < 0 or m > len(d):
                        raise struct.error(f"array length {m} out of range")
                    rows.append(list(unpack(f">{m}i", d, p + 4)))
                    p += 4 + 4 * m
                out[name] = rows
            elif code == "S":
                out[name], p = self._statuses(p, mask, status_tag)
        return out, p

    def _statuses(self, p, mask, status_tag):
        if not mask & 0x03:
            return None, p
        (cnt,) = struct.unpack_from(">i", self.d, p)
        p += 4
        if cnt < 0 or cnt > len(self.d):
            raise struct.error(f"status count {cnt} out of range")
        sts = []
        for _ in range(cnt):
            nbytes, src = struct.unpack_from(">ii", self.d, p)
            p += 10
            tag = None
            if status_tag:
                (tag,) = struct.unpack_from(">i", self.d, p)
                p += 4
            sts.append((nbytes, src, tag))
        return sts, p

    def _special(self, name, p, mask, st):
        dec = self._decode
        if name in ("Gather", "Scatter"):
            cnt, typ = ("sendcount", "sendtype") if name == "Gather" else ("recvcount", "recvtype")
            f, p = dec([("i", "commrank"), ("i", cnt), ("h", typ), ("i", "root"),
                        ("h", "comm")], p, mask, st)
            if f["commrank"] == f["root"]:
                o = ("recvcount", "recvtype") if name == "Gather" else ("sendcount", "sendtype")
                g, p = dec([("i", o[0]), ("h", o[1])], p, mask, st)
                f.update(g)
            return f, p
        if name == "Gatherv":
            f, p = dec([("i", "commrank"), ("i", "commsize"), ("i", "sendcount"),
                        ("h", "sendtype"), ("i", "root"), ("h", "comm")], p, mask, st)
            if f["commrank"] == f["root"]:
                g, p = dec([("A", "recvcounts"), ("A", "displs")], p, mask, st)
                f.update(g)
            g, p = dec([("h", "recvtype")], p, mask, st)
            f.update(g)
            return f, p
        if name == "Scatterv":
            f, p = dec([("i", "commrank"), ("i", "commsize"), ("h", "sendtype"),
                        ("i", "recvcount"), ("h", "recvtype"), ("i", "root"), ("h", "comm")],
                       p, mask, st)
            if f["commrank"] == f["root"]:
                g, p = dec([("A", "sendcounts"), ("A", "displs")], p, mask, st)
                f.update(g)
            return f, p
        if name in ("Init", "Init_thread"):
            (argc,) = struct.unpack_from(">i", self.d, p)
            p += 4
            if name == "Init" and not version_at_least(self.version, 0, 6, 2):
                p += 4  # early versions wrote argc twice
            if argc < 0 or argc > len(self.d):
                raise struct.error(f"argc {argc} out of range")
            argv = []
            for _ in range(argc):
                g, p = dec([("C", "arg")], p, mask, st)
                argv.append(g["arg"].decode("latin-1"))
            f = {"argc": argc, "argv": argv}
            if name == "Init_thread":
                g, p = dec([("b", "required"), ("b", "provided")], p, mask, st)
                f.update(g)
            return f, p
        if name == "Type_struct":
            idx = "A" if version_at_least(self.version, 0, 6, 9) else "i"
            return dec([("i", "count"), ("A", "lengths"), (idx, "indices"), ("D", "oldtypes"),
                        ("h", "newtype")], p, mask, st)
        # Cart_get
        co = "A" if version_at_least(self.version, 0, 6, 8) else "i"
        return dec([("i", "ndim"), ("h", "comm"), ("i", "maxdims"), ("A", "dims"),
                    ("A", "periods"), (co, "coords")], p, mask, st)


def read_meta(path: str) -> dict[str, str]:
    """Parse a DUMPI ``.meta`` file (``key=value`` lines)."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for i, raw in enumerate(f, 1):
                line = raw.strip()
                if not line:
                    continue
                k, eq, v = line.partition("=")
                if not eq:
                    raise CcmodInputError(f"line is not key=value: '{line[:60]}'", source=path,
                                          line=i)
                out[k.strip()] = v.strip()
    except UnicodeDecodeError:
        raise CcmodInputError("DUMPI .meta file is not text", source=path) from None
    except OSError as exc:
        raise CcmodInputError(f"cannot read DUMPI .meta file: {exc}", source=path) from None
    for key in ("numprocs", "fileprefix"):
        if key not in out:
            raise CcmodInputError(f"DUMPI .meta file has no '{key}='", source=path)
    try:
        n = int(out["numprocs"])
    except ValueError:
        raise CcmodInputError(f"numprocs '{out['numprocs']}' is not an integer",
                              source=path) from None
    if not 1 <= n <= 1 << 22:
        raise CcmodInputError(f"numprocs {n} out of range", source=path)
    return out


def rank_files(meta_path: str, meta: dict[str, str]) -> list[str]:
    """The per-rank ``PREFIX-NNNN.bin`` files named by a .meta file."""
    base = os.path.dirname(os.path.abspath(meta_path))
    prefix = os.path.basename(meta["fileprefix"])
    return [os.path.join(base, f"{prefix}-{r:04d}.bin") for r in range(int(meta["numprocs"]))]
